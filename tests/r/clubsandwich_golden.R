# Golden values for harness.stats.cr2 (tests/test_stats_cr2.py).
#
# Independent reference: clubSandwich (Pustejovsky), vcovCR(type = "CR2") and
# coef_test(test = "Satterthwaite") / conf_int() on an intercept-only lm(), with
# lm(weights = w) for the weighted (ratio-estimator) cases.
#
# Run:  Rscript tests/r/clubsandwich_golden.R > tests/r/clubsandwich_golden.out 2>&1
# The data below are copied verbatim into tests/test_stats_cr2.py.
suppressPackageStartupMessages(library(clubSandwich))

cl_unequal <- c(1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 7, 7, 7)
y_unequal <- c(0.084, 0.772, 0.0, 0.396, 0.23, 0.048, 0.496, 0.0, 0.056, 0.173, 1.0, 1.0,
               0.0, 0.006, 0.759, 0.689, 0.123, 0.883, 0.21, 0.151, 0.527, 0.021, 0.0, 0.299)
w_unequal <- c(1, 2, 3, 2, 1, 3, 1, 5, 2, 1, 1, 4, 4, 1, 1, 2, 2, 4, 4, 5, 4, 3, 1, 2)

cl_singmix <- c(1, 2, 3, 4, 5, 6, 6, 6, 7, 7, 7, 7)
y_singmix <- c(0.054, 1.0, 0.476, 0.457, 0.162, 0.592, 0.0, 0.242, 0.674, 0.038, 0.0, 0.395)
w_singmix <- c(2, 1, 3, 1, 2, 1, 4, 2, 3, 1, 1, 2)

cl_allsing <- 1:8
y_allsing <- c(1.0, 0.664, 0.119, 0.078, 0.013, 0.437, 0.139, 0.0)

cl_two <- c(1, 1, 1, 2, 2, 2, 2, 2)
y_two <- c(0.427, 0.0, 0.0, 0.043, 0.842, 0.171, 0.274, 1.0)

cl_paired <- c(1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6)
ya_paired <- c(0.819, 0.119, 0.005, 0.662, 1.0, 0.134, 0.774, 0.177, 0.557, 0.019, 0.641,
               0.507, 0.0, 0.299, 0.0, 1.0, 0.297, 0.019)
yb_paired <- c(0.906, 0.228, 0.629, 0.082, 0.808, 0.035, 0.297, 0.7, 0.474, 0.606, 0.118,
               0.817, 0.48, 0.989, 0.334, 0.906, 0.028, 0.706)

golden <- function(name, y, cl, w = NULL) {
  d <- data.frame(y = y, cl = factor(cl))
  if (is.null(w)) {
    fit <- lm(y ~ 1, data = d)
  } else {
    d$w <- w
    fit <- lm(y ~ 1, data = d, weights = w)
  }
  vc <- vcovCR(fit, cluster = d$cl, type = "CR2")
  ct <- coef_test(fit, vcov = vc, test = "Satterthwaite")
  ci <- conf_int(fit, vcov = vc, level = 0.95, test = "Satterthwaite")
  cat(sprintf("CASE %s est=%.17g se=%.17g df=%.17g lower=%.17g upper=%.17g\n",
              name, ct$beta[1], ct$SE[1], ct$df_Satt[1], ci$CI_L[1], ci$CI_U[1]))
}

golden("unequal", y_unequal, cl_unequal)
golden("singmix", y_singmix, cl_singmix)
golden("allsing", y_allsing, cl_allsing)
golden("two", y_two, cl_two)
golden("weighted", y_unequal, cl_unequal, w_unequal)
golden("weighted_singmix", y_singmix, cl_singmix, w_singmix)
# weights 1/n_j, constant within each cluster: the macro average of cluster means
golden("macro_weights", y_unequal, cl_unequal, 1 / as.vector(table(cl_unequal)[as.character(cl_unequal)]))
golden("paired_diff", yb_paired - ya_paired, cl_paired)

# cluster_t reference: t.test over the cluster means (macro average)
tt <- function(name, y, cl) {
  m <- tapply(y, cl, mean)
  r <- t.test(m, conf.level = 0.95)
  cat(sprintf("TTEST %s est=%.17g se=%.17g df=%.17g lower=%.17g upper=%.17g\n",
              name, unname(r$estimate), unname(r$stderr), unname(r$parameter),
              r$conf.int[1], r$conf.int[2]))
}
tt("unequal", y_unequal, cl_unequal)
tt("paired_diff", yb_paired - ya_paired, cl_paired)

cat("\n")
print(sessionInfo())
cat(sprintf("clubSandwich %s\n", as.character(packageVersion("clubSandwich"))))
