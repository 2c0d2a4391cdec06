#!/usr/bin/env bash
# The demo database behind docs/report.png: the imported H100 results, three quick runs of the
# default suite, a sweep, a scaling run, two training runs and a recommendation on this machine;
# then the report and its screenshot. Usage, from the repository root: bash benchmarks/report_demo.sh [DB]
# (about 20 minutes on a 2-core VM)
set -euxo pipefail
DB=${1:-demo.db}
rm -f "$DB"
rigbench results import docs/results/gpu-h100.bundle.json --db $DB
for i in 1 2 3; do rigbench run --quick -d cpu --db $DB; done
rigbench sweep cnn mlp -d cpu -b 16,32,64,128 --quick --db $DB
rigbench scaling cnn -d cpu --quick --db $DB
rigbench train mlp --dataset digits -d cpu --db $DB
rigbench train cnn --dataset digits -d cpu --db $DB
rigbench recommend mlp -d cpu --db $DB
# frameworks side by side (needs the jax, tensorflow and keras extras)
rigbench run mlp cnn -b 128 -d cpu --framework torch,jax,tensorflow,keras-jax,keras-torch --db $DB
rigbench report --db $DB --out report_demo.html --screenshot docs/report.png
