#!/usr/bin/env bash
# The reduced CPU protocol actually run for benchmarks/RESULTS.md (shared, heavily loaded 2-core
# machine): seed 0 only, width 256 x 4 blocks, Adam 5e-4, batch 512, training time-boxed.
set -u
B=benchmarks/estimate_copula/bench.py
R=benchmarks/estimate_copula/results
export OMP_NUM_THREADS=1
case "${1:-a}" in
a)
  python $B run --dataset magic --models reflection --reflection-seconds 240 --timeout 900 --out $R/magic_reflection.yaml
  for d in clayton2 student8 gumbel5; do
    python $B run --dataset $d --models gaussian,cdc --hidden 128 --depth 2 --lr 1e-3 --cdc-seconds 150 --timeout 900 --out $R/$d.yaml
  done
  python $B run --dataset mixture2 --models gaussian,vine,cdc --hidden 128 --depth 2 --lr 1e-3 --cdc-seconds 150 --timeout 900 --out $R/mixture2.yaml
  ;;
b)
  python $B run --dataset drybean13 --models gaussian,vine,cdc --cdc-seconds 240 --is-draws 200000 --timeout 1200 --out $R/drybean13.yaml
  python $B run --dataset drybean16 --models gaussian,vine,cdc-guided --cdc-seconds 240 --is-draws 200000 --timeout 1200 --out $R/drybean16.yaml
  python $B run --dataset digits --models gaussian,vine,cdc,reflection --cdc-seconds 240 --reflection-seconds 120 --is-draws 200000 --timeout 1200 --out $R/digits.yaml
  ;;
c)
  python $B run --dataset magic --models cdc --cdc-seconds 900 --timeout 1850 --out $R/magic_cdc_900s.yaml
  ;;
d)
  # log Z with both proposals (issue's and the CDC's own samples) on one MAGIC CDC
  python $B run --dataset magic --models cdc --cdc-seconds 300 --proposals issue,samples --timeout 1500 --out $R/magic_cdc_proposals.yaml
  ;;
e)
  # 5-seed protocol on MAGIC (seeds 0..4, 80/20 each), CDC time-boxed to 90 s, IS 2x10^5 per proposal
  python $B run --dataset magic --seeds 0,1,2,3,4 --models gaussian,vine,cdc --cdc-seconds 90 --is-draws 200000 --proposals issue,samples --timeout 1500 --out $R/magic_5seeds.yaml
  ;;
f)
  # the 2-D mixture (CDC vs TLL vine) on two more seeds (issue 19 audit)
  python $B run --dataset mixture2 --seeds 1,2 --models gaussian,vine,cdc --hidden 128 --depth 2 --lr 1e-3 --cdc-seconds 150 --timeout 420 --out $R/mixture2_seeds12.yaml
  ;;
g)
  # the 8-D Student-t exactness case on two more seeds (issue 19 audit)
  python $B run --dataset student8 --seeds 1,2 --models gaussian,cdc --hidden 128 --depth 2 --lr 1e-3 --cdc-seconds 150 --proposals issue --timeout 330 --out $R/student8_seeds12.yaml
  ;;
h)
  # the 5-D Gumbel and 2-D Clayton exactness cases on two more seeds (issue 19 audit)
  for d in gumbel5 clayton2; do
    python $B run --dataset $d --seeds 1,2 --models gaussian,cdc --hidden 128 --depth 2 --lr 1e-3 --cdc-seconds 150 --proposals issue --timeout 280 --out $R/${d}_seeds12.yaml
  done
  ;;
esac
