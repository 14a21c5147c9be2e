#!/usr/bin/env bash
# bench/peer_compare.py and bench/torch_bench.py without PyTorch: the join of ctorch's and a peer's
# JSON lines (ratios, time units inverted, targets met and missed on a CUDA device, none on the
# CPU; ctorch's header line about the CPU shown, not reported as a problem), --strict failing on a
# broken join and only then, ctorch alone with --no-peer, and the fake peer printing the cases
# ctorch bench's device groups name. Skipped (77) without python3.
# Usage: check_peer_compare.sh <source dir>
set -u
source_dir=$1
python=$(command -v python3) || { echo "no python3: skipped"; exit 77; }
compare="$source_dir/bench/peer_compare.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; [ -e "$work/out" ] && { echo "--- output:"; cat "$work/out"; }; exit 1; }

cat > "$work/ctorch.json" <<'JSON'
{"cpu": {"model_name": "Test CPU", "extensions": ["avx2", "fma"], "engines": [{"name": "OpenBLAS", "kernel": "Haswell", "below_cpu": false}, {"name": "oneDNN", "kernel": "sse41", "below_cpu": true}]}}
{"name": "matmul_f32_256", "device": "cuda:0", "value": 100, "unit": "GFLOP/s", "baseline": null, "ratio": null, "target": "report", "met": true}
{"name": "add_f32_16M", "device": "cuda:0", "value": 2900, "unit": "GB/s", "baseline": 2950, "ratio": 0.98, "target": "report", "met": true}
{"name": "sum_f32_16M", "device": "cuda:0", "value": 1000, "unit": "GB/s", "baseline": null, "ratio": null, "target": "report", "met": true}
{"name": "op_overhead_add_4", "device": "cuda:0", "value": 2.5, "unit": "us", "baseline": null, "ratio": null, "target": "report", "met": true}
{"name": "train_mlp_b32", "device": "cuda:0", "value": 50000, "unit": "samples/s", "baseline": null, "ratio": null, "target": "report", "met": true}
{"name": "train_mlp_digits_cpu", "device": "cpu", "value": 1200, "unit": "steps/s", "baseline": 1300, "ratio": 0.92, "target": "ratio >= 0.8", "met": true}
JSON
cat > "$work/peer.json" <<'JSON'
{"name": "add_f32_16M", "device": "cuda:0", "value": 3000, "unit": "GB/s", "peer": "torch 9.9"}
{"name": "sum_f32_16M", "device": "cuda:0", "value": 2000, "unit": "GB/s", "peer": "torch 9.9"}
{"name": "op_overhead_add_4", "device": "cuda:0", "value": 10, "unit": "us", "peer": "torch 9.9"}
{"name": "train_mlp_b32", "device": "cuda:0", "value": 10000, "unit": "samples/s", "peer": "torch 9.9"}
JSON
row() { grep -E "^$1 " "$work/out" || fail "no row $1"; }

"$python" "$compare" --ctorch "$work/ctorch.json" --peer "$work/peer.json" --device cuda:0 --strict --others > "$work/out" 2>&1 \
  || fail "a matching join exits $?"
row add_f32_16M | grep -q '2900 *3000 *0.967  >= 0.95  met' || fail "add: ratio 0.9667, target 0.95 met"
row sum_f32_16M | grep -q '1000 *2000 *0.500  >= 0.9  MISSED' || fail "sum: ratio 0.5, target 0.9 missed"
row op_overhead_add_4 | grep -q '2.5 *10 *4.000$' || fail "overhead in us: ratio PyTorch's time over ctorch's, 4, no target"
row train_mlp_b32 | grep -q '5.000  >= 4  met' || fail "train b32: ratio 5 meets 4"
grep -q 'targets against torch 9.9: 2 met, 1 missed' "$work/out" || fail "the count of targets"
grep -q "ctorch's other benchmarks" "$work/out" && row matmul_f32_256 > /dev/null && row train_mlp_digits_cpu > /dev/null \
  || fail "--others: ctorch's results without a twin"
echo "ok: a join on cuda:0 with targets"

# On the CPU: ratios, no targets.
sed 's/cuda:0/cpu/' "$work/ctorch.json" > "$work/ctorch-cpu.json"
sed 's/cuda:0/cpu/' "$work/peer.json" > "$work/peer-cpu.json"
"$python" "$compare" --ctorch "$work/ctorch-cpu.json" --peer "$work/peer-cpu.json" --device cpu > "$work/out" 2>&1 || fail "cpu join"
row sum_f32_16M | grep -q "0.500$" || fail "cpu: the ratio without a target"
grep -q 'MISSED\|met' "$work/out" && fail "cpu: targets are for a GPU"
grep -q "^ctorch's CPU: Test CPU; OpenBLAS Haswell, oneDNN sse41 (BELOW the CPU)$" "$work/out" \
  || fail "cpu: ctorch bench's header line (the CPU and its engines' kernels) is shown"
echo "ok: a join on the cpu, without targets"

# A broken join: PyTorch measured a case ctorch did not, and a unit differs.
{ cat "$work/peer.json"; echo '{"name": "max_f32_16M", "device": "cuda:0", "value": 1, "unit": "GB/s", "peer": "torch 9.9"}'; } > "$work/peer-extra.json"
sed 's/"unit": "samples\/s"/"unit": "steps\/s"/' "$work/peer-extra.json" > "$work/peer-broken.json"
"$python" "$compare" --ctorch "$work/ctorch.json" --peer "$work/peer-broken.json" --device cuda:0 --strict > "$work/out" 2>&1 \
  && fail "--strict passed a broken join"
grep -q 'max_f32_16M: measured by PyTorch alone' "$work/out" || fail "the missing case is named"
grep -q 'train_mlp_b32: ctorch in samples/s, PyTorch in steps/s' "$work/out" || fail "the unit mismatch is named"
"$python" "$compare" --ctorch "$work/ctorch.json" --peer "$work/peer-broken.json" --device cuda:0 > "$work/out" 2>&1 \
  || fail "without --strict a broken join is reported, not failed"
echo "ok: --strict fails a broken join"

# No PyTorch: ctorch alone, saying why.
"$python" "$compare" --ctorch "$work/ctorch.json" --no-peer "not importable here (No module named 'torch')" --device cuda:0 > "$work/out" 2>&1 \
  || fail "--no-peer exits $?"
grep -q "^PyTorch: not importable here (No module named 'torch'); ctorch's figures alone" "$work/out" || fail "--no-peer's line"
row sum_f32_16M | grep -q '1000 *- *-  >= 0.9$' || fail "--no-peer: ctorch's figure and the target, nothing judged"
echo "ok: ctorch alone without PyTorch"

# The fake peer: no PyTorch needed, ctorch bench's device cases by name, the same filter rules.
"$python" "$source_dir/bench/torch_bench.py" --fake --quick --json --device cuda:0 > "$work/out" 2>&1 || fail "torch_bench.py --fake"
for name in add_f32_16M mul_f32_16M exp_f32_16M sum_f32_16M max_f32_16M sum_dim0_f32_4096x4096 sum_dim1_f32_4096x4096 \
            softmax_f32_4096x1000 cross_entropy_f32_4096x1000 op_overhead_add_4 train_mlp_b32 train_mlp_b512 \
            train_cnn_b32 train_cnn_b512; do
  grep -q "^{\"name\": \"$name\", \"device\": \"cuda:0\", \"value\": 1.0" "$work/out" || fail "fake peer: no $name"
done
grep -q '256M\|8192' "$work/out" && fail "--quick ran a big size"
"$python" "$source_dir/bench/torch_bench.py" --fake --big --json --device cuda:0 '^add_f32,sum_dim1,b512$' > "$work/out" 2>&1 || fail "filter"
[ "$(grep -c . "$work/out")" = 5 ] && grep -q add_f32_256M "$work/out" && grep -q train_cnn_b512 "$work/out" \
  || fail "the filter '^add_f32,sum_dim1,b512\$' with --big: add 16M and 256M, sum_dim1, the two b512"
echo "ok: the fake peer"
exit 0
