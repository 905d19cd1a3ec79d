# Golden values for harness.stats.cr3 (CR3 jackknife, Satterthwaite df) and harness.stats.korn_graubard
# (tests/test_stats_cr3.py, tests/test_stats_korn_graubard.py).
#
# Independent references:
#  * clubSandwich (Pustejovsky): vcovCR(type = "CR3") with coef_test(test = "Satterthwaite") and conf_int() on an
#    intercept-only lm(), lm(weights = w) for the weighted (ratio-estimator) cases;
#  * survey (Lumley): svyciprop(method = "beta") (Korn & Graubard 1998) on a one-stage cluster design
#    svydesign(ids = ~cl, data = ...), with weights = ~w or fpc = ~gpop where a case says so.
#
# Run:  Rscript tests/r/cr3_kg_golden.R > tests/r/cr3_kg_golden.out 2>&1
# The data below are copied verbatim into the tests.
suppressPackageStartupMessages({
  library(clubSandwich)
  library(survey)
})

cl_unequal <- c(1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 7, 7, 7)
y_unequal <- c(0.084, 0.772, 0.0, 0.396, 0.23, 0.048, 0.496, 0.0, 0.056, 0.173, 1.0, 1.0,
               0.0, 0.006, 0.759, 0.689, 0.123, 0.883, 0.21, 0.151, 0.527, 0.021, 0.0, 0.299)
w_unequal <- c(1, 2, 3, 2, 1, 3, 1, 5, 2, 1, 1, 4, 4, 1, 1, 2, 2, 4, 4, 5, 4, 3, 1, 2)

cl_singmix <- c(1, 2, 3, 4, 5, 6, 6, 6, 7, 7, 7, 7)
y_singmix <- c(0.054, 1.0, 0.476, 0.457, 0.162, 0.592, 0.0, 0.242, 0.674, 0.038, 0.0, 0.395)
w_singmix <- c(2, 1, 3, 1, 2, 1, 4, 2, 3, 1, 1, 2)

cl_two <- c(1, 1, 1, 2, 2, 2, 2, 2)
y_two <- c(0.427, 0.0, 0.0, 0.043, 0.842, 0.171, 0.274, 1.0)

cl_paired <- c(1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6)
ya_paired <- c(0.819, 0.119, 0.005, 0.662, 1.0, 0.134, 0.774, 0.177, 0.557, 0.019, 0.641,
               0.507, 0.0, 0.299, 0.0, 1.0, 0.297, 0.019)
yb_paired <- c(0.906, 0.228, 0.629, 0.082, 0.808, 0.035, 0.297, 0.7, 0.474, 0.606, 0.118,
               0.817, 0.48, 0.989, 0.334, 0.906, 0.028, 0.706)

cr3 <- function(name, y, cl, w = NULL, level = 0.95) {
  d <- data.frame(y = y, cl = factor(cl))
  if (is.null(w)) {
    fit <- lm(y ~ 1, data = d)
  } else {
    d$w <- w
    fit <- lm(y ~ 1, data = d, weights = w)
  }
  vc <- vcovCR(fit, cluster = d$cl, type = "CR3")
  ct <- coef_test(fit, vcov = vc, test = "Satterthwaite")
  ci <- conf_int(fit, vcov = vc, level = level, test = "Satterthwaite")
  cat(sprintf("CR3 %s est=%.17g se=%.17g df=%.17g lower=%.17g upper=%.17g\n",
              name, ct$beta[1], ct$SE[1], ct$df_Satt[1], ci$CI_L[1], ci$CI_U[1]))
}

cr3("unequal", y_unequal, cl_unequal)
cr3("singmix", y_singmix, cl_singmix)
cr3("two", y_two, cl_two)
cr3("weighted", y_unequal, cl_unequal, w_unequal)
cr3("weighted_singmix", y_singmix, cl_singmix, w_singmix)
cr3("paired_diff", yb_paired - ya_paired, cl_paired)
cr3("unequal_90", y_unequal, cl_unequal, level = 0.90)

# Korn-Graubard: binary outcomes
cl_kg <- c(1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 8, 8, 8, 9, 9, 9, 9)
y_kg <- c(1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0)
w_kg <- c(2, 2, 1, 3, 1, 1, 1, 2, 2, 4, 1, 1, 1, 2, 2, 2, 1, 1, 3, 3, 1, 2, 1, 1, 1, 1, 2)
cl_rare <- rep(1:15, times = c(3, 1, 4, 2, 6, 1, 3, 2, 5, 2, 1, 4, 3, 2, 1))
y_rare <- rep(0, length(cl_rare))
y_rare[c(2, 9, 10, 30)] <- 1

kg <- function(name, y, cl, w = NULL, gpop = NULL, level = 0.95) {
  d <- data.frame(y = y, cl = cl)
  if (!is.null(w)) d$w <- w
  if (!is.null(gpop)) d$gpop <- gpop
  des <- suppressWarnings(svydesign(ids = ~cl, data = d,
                                    weights = if (is.null(w)) NULL else ~w,
                                    fpc = if (is.null(gpop)) NULL else ~gpop))
  r <- svyciprop(~y, des, method = "beta", level = level)
  ci <- attr(r, "ci")
  cat(sprintf("KG %s est=%.17g se=%.17g lower=%.17g upper=%.17g\n",
              name, as.numeric(r), sqrt(as.numeric(attr(r, "var"))), ci[1], ci[2]))
}

kg("basic", y_kg, cl_kg)
kg("weighted", y_kg, cl_kg, w = w_kg)
kg("fpc", y_kg, cl_kg, gpop = 40)
kg("level90", y_kg, cl_kg, level = 0.90)
kg("rare", y_rare, cl_rare)

cat("\n")
print(sessionInfo())
cat(sprintf("clubSandwich %s\n", as.character(packageVersion("clubSandwich"))))
cat(sprintf("survey %s\n", as.character(packageVersion("survey"))))
