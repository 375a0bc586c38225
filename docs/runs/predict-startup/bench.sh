#!/usr/bin/env bash
# re2-predict's time to first answer for one pair, before (4f3fdf3, the commit before issue 24's
# changes) and after (this commit), each on an export its own re2-export wrote from the same
# run directory. Prints hyperfine's table. OLD: a checkout of 4f3fdf3 (a `git worktree`);
# RUNS: the quick-start run directories (their flags.txt's --run_dir); P: a scratch directory.
set -euo pipefail
cd "$(dirname "$0")/../../.." && . .venv/bin/activate
export TF_CPP_MIN_LOG_LEVEL=2 HF_HUB_OFFLINE=1
OLD=$(realpath "${OLD:?set OLD to a checkout of commit 4f3fdf3}")
RUNS=${RUNS:-checkpoints/quick-start}; P=${P:-$(mktemp -d)}; mkdir -p "$P"
printf 'A man plays a guitar on stage.\tA man is performing music.\n' > $P/pair.tsv
for m in re2-sample bert_matchlstm-sample; do
  run=$(realpath "$RUNS/$m")
  [ -d $P/new-$m ] || python -m re2_tf.cli.export --run_dir=$run --export_dir=$P/new-$m > /dev/null 2>&1
  [ -d $P/old-$m ] || (cd $OLD && PYTHONPATH=$OLD python -m re2_tf.cli.export --run_dir=$run --export_dir=$P/old-$m > /dev/null 2>&1) || echo "old export of $m failed"
done
rm -rf $P/xla-cache; mkdir -p $P/xla-cache
args=()
for m in re2-sample bert_matchlstm-sample; do
  [ -d $P/old-$m ] && args+=(-n "before $m" "cd $OLD && PYTHONPATH=$OLD python -m re2_tf.cli.predict --export_dir=$P/old-$m --input=$P/pair.tsv")
  args+=(-n "after $m" "python -m re2_tf.cli.predict --export_dir=$P/new-$m --input=$P/pair.tsv")
  args+=(-n "after $m, persistent XLA cache" "TF_XLA_FLAGS=--tf_xla_persistent_cache_directory=$P/xla-cache python -m re2_tf.cli.predict --export_dir=$P/new-$m --input=$P/pair.tsv")
done
hyperfine --style basic --warmup 1 --runs 5 --export-markdown $P/predict.md "${args[@]}"
