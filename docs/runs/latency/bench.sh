#!/usr/bin/env bash
# The latency records behind the README's Table 5 table and the per-model latency tables in
# docs/<model>.md: re2-bench (Table 5 protocol: fresh process per export, batch 8 x 20, median
# of 100 batches) on every model, one command after another on a quiet machine, each writing its
# record (rows, settings, command, CPU, date) with --json_out. Run from the repository root:
#     bash docs/runs/latency/bench.sh
# then `python -m re2_lab.cli.summarize --update_docs=README.md,docs/drcn.md,docs/fitn.md,docs/match_srnn.md,docs/bert_matchlstm.md`.
set -euo pipefail
out=docs/runs/latency
threads=(--intra_op_threads=2 --inter_op_threads=1)
re2-bench "${threads[@]}" --plain_export --json_out=$out/re2-savedmodel.json
re2-bench "${threads[@]}" --xla=false --throughput_batch=0 --json_out=$out/re2-savedmodel-noxla.json
re2-bench "${threads[@]}" --format=tflite --throughput_batch=0 --json_out=$out/re2-tflite.json
re2-bench "${threads[@]}" --format=tflite --precision=int8 --throughput_batch=0 \
  --json_out=$out/re2-tflite-int8.json
for model in drcn fitn match_srnn; do
  re2-bench "${threads[@]}" --model=$model --plain_export --throughput_batch=0 \
    --json_out=$out/$model.json
done
re2-bench "${threads[@]}" --model=bert_matchlstm --throughput_batch=0 \
  --json_out=$out/bert_matchlstm.json
