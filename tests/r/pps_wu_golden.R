# Golden values for harness.stats.pps (Hansen-Hurwitz, PPS with replacement) and harness.stats.wu (Wu's v_g on CR2)
# (tests/test_stats_pps_wu.py).
#
# Independent references:
#  * survey (Lumley): a with-replacement one-stage design svydesign(ids = ~draw, probs = ~pi) whose PSUs are the
#    draws (a document drawn twice is two PSUs) and whose row inclusion probabilities are pi = K n_j / X (K draws,
#    n_j the drawn document's rows, X the frame total). svymean(~y) is then the Hansen-Hurwitz mean of the drawn
#    documents' rates with its with-replacement variance; confint(..., df = degf(design)) the identity-scale t
#    interval; svyciprop(~y, method = "xlogit") the logit-scale one (df = degf(design) = K - 1).
#  * clubSandwich (Pustejovsky): vcovCR(lm(y ~ 1), cluster, type = "CR2") and coef_test(test = "Satterthwaite"); Wu's
#    v_g = (Xbar / xbar)^(g - 2) V_CR2 (Wu 1982, Biometrika 69:183) computed here from that variance, the t interval
#    with the Satterthwaite df (identity and logit scale, with and without 1 - G / G_pop).
#
# Run:  Rscript tests/r/pps_wu_golden.R > tests/r/pps_wu_golden.out 2>&1
# The data below are copied verbatim into the tests.
suppressPackageStartupMessages({
  library(clubSandwich)
  library(survey)
})

# --- Hansen-Hurwitz ---------------------------------------------------------------------------------------------
# draw id per row, the drawn document's frame size n (rows per draw here = n), outcome y; frame total X.
draw_bin <- c(1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7)
y_bin <- c(1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1)
X_bin <- 300

# a document drawn twice: draws 2 and 5 are the same document (same rows)
draw_dup <- c(1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6)
y_dup <- c(0.5, 1, 0.25, 0, 1, 0.2, 1, 1, 0.5, 0, 0.25, 0, 1, 0.125, 0)
X_dup <- 120

draw_diff <- c(1, 1, 2, 3, 3, 3, 4, 4, 5, 5, 5, 5, 6, 7, 7, 8, 8, 8)
y_diff <- c(1, 0, -1, 0.5, 0, 0, -0.5, 1, 0, 0, 1, -1, 0.25, 0, 0.75, -0.25, 0, 1)
X_diff <- 500

hh <- function(name, draw, y, X, level = 0.95, logit = TRUE) {
  n <- ave(rep(1, length(draw)), draw, FUN = sum)
  K <- length(unique(draw))
  d <- data.frame(y = y, draw = factor(draw), pi = K * n / X)
  des <- svydesign(ids = ~draw, probs = ~pi, data = d)
  m <- svymean(~y, des)
  ci <- confint(m, level = level, df = degf(des))
  cat(sprintf("HH %s est=%.17g se=%.17g df=%.17g lower=%.17g upper=%.17g\n",
              name, coef(m)[1], SE(m)[1], degf(des), ci[1, 1], ci[1, 2]))
  if (logit) {
    p <- svyciprop(~y, des, method = "xlogit", level = level)
    cat(sprintf("HHLOGIT %s est=%.17g lower=%.17g upper=%.17g\n", name, as.numeric(p), attr(p, "ci")[1],
                attr(p, "ci")[2]))
  }
}

hh("binary", draw_bin, y_bin, X_bin)
hh("binary_90", draw_bin, y_bin, X_bin, level = 0.90)
hh("duplicate", draw_dup, y_dup, X_dup)
hh("difference", draw_diff, y_diff, X_diff, logit = FALSE)

# --- Wu v_g on CR2 ----------------------------------------------------------------------------------------------
cl_wu <- c(1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 7, 7, 7)
y_wu <- c(0.084, 0.772, 0.0, 0.396, 0.23, 0.048, 0.496, 0.0, 0.056, 0.173, 1.0, 1.0,
          0.0, 0.006, 0.759, 0.689, 0.123, 0.883, 0.21, 0.151, 0.527, 0.021, 0.0, 0.299)
cl_wub <- c(1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 8, 8, 8, 9, 9, 9, 9)
y_wub <- c(1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0)

wu <- function(name, y, cl, Xbar, g = 3, level = 0.95, gpop = NULL) {
  d <- data.frame(y = y, cl = factor(cl))
  fit <- lm(y ~ 1, data = d)
  vc <- vcovCR(fit, cluster = d$cl, type = "CR2")
  ct <- coef_test(fit, vcov = vc, test = "Satterthwaite")
  G <- length(unique(cl))
  xbar <- length(y) / G
  f <- if (is.null(gpop)) 1 else 1 - G / gpop
  V <- (Xbar / xbar)^(g - 2) * vc[1, 1] * f
  se <- sqrt(V)
  est <- ct$beta[1]
  df <- ct$df_Satt[1]
  q <- qt(0.5 + level / 2, df)
  lg <- qlogis(est) + c(-1, 1) * q * se / (est * (1 - est))
  cat(sprintf("WU %s est=%.17g se=%.17g df=%.17g lower=%.17g upper=%.17g logit_lower=%.17g logit_upper=%.17g\n",
              name, est, se, df, est - q * se, est + q * se, plogis(lg[1]), plogis(lg[2])))
}

wu("unit", y_wu, cl_wu, Xbar = 5.5)
wu("unit_fpc", y_wu, cl_wu, Xbar = 5.5, gpop = 40)
wu("unit_g4_90", y_wu, cl_wu, Xbar = 2.0, g = 4, level = 0.90)
wu("binary", y_wub, cl_wub, Xbar = 4.25)

sessionInfo()
