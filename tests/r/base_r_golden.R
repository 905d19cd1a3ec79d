# Golden values from base R for harness.stats.holm (tests/test_stats_compare.py).
# Run: Rscript tests/r/base_r_golden.R > tests/r/base_r_golden.out 2>&1
p <- c(0.01, 0.04, 0.03, 0.005, 0.5, 0.04)
cat(sprintf("HOLM %s\n", paste(sprintf("%.17g", p.adjust(p, method = "holm")), collapse = " ")))
p2 <- c(0.2, 0.001, 0.9, 0.02)
cat(sprintf("HOLM2 %s\n", paste(sprintf("%.17g", p.adjust(p2, method = "holm")), collapse = " ")))
cat("\n")
print(sessionInfo())
