#!/usr/bin/env bash
# issue 32: the tool at its defaults (fit --copula auto --budget 240, evaluate's adaptive IS) against
# the Gaussian copula and the TLL vine, one run per block; shared, loaded 2-core machine.
set -u
D=benchmarks/estimate_copula/defaults.py
R=benchmarks/estimate_copula/results
case "${1:-a}" in
a) python $D --tables magic --seeds 0 --out $R/defaults_magic.yaml ;;
b) python $D --tables wine,diabetes,breast_cancer --seeds 0,1,2 --out $R/defaults_small.yaml ;;
c) python $D --tables drybean13 --seeds 0 --out $R/defaults_drybean13.yaml ;;
d) python $D --tables magic --seeds 1,2 --out $R/defaults_magic_seeds12.yaml ;;
# the same blocks on 2 idle cores (2026-12-04, run one after another, nothing else running for
# the first four; the Dry Bean seeds 1-2 beside two niced helpers):
idle) python $D --tables magic --seeds 0 --out $R/defaults_magic_idle.yaml
      python $D --tables magic --seeds 1,2 --out $R/defaults_magic_idle_seeds12.yaml
      python $D --tables drybean13 --seeds 0 --out $R/defaults_drybean13_idle.yaml
      python $D --tables wine,diabetes,breast_cancer --seeds 0,1,2 --out $R/defaults_small_idle.yaml
      python $D --tables drybean13 --seeds 1,2 --out $R/defaults_drybean13_idle_seeds12.yaml ;;
# the size the issue names, 20,000 rows x 32 columns (a Student-t copula, rho 0.6, nu 4): wall
# clock and peak memory of the default fit and of evaluate on the same 20,000 rows
wide) cortexkit estimate-copula simulate --copula student:rho=0.6,nu=4 --dim 32 -n 20000 -o /tmp/t32.st
      /usr/bin/time -v cortexkit estimate-copula fit /tmp/t32.st -o /tmp/t32m.st
      /usr/bin/time -v cortexkit estimate-copula evaluate /tmp/t32m.st /tmp/t32.st ;;
esac
