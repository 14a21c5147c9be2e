#!/usr/bin/env bash
# bench/peer_compare.py and bench/torch_bench.py without PyTorch: the join of ctorch's and a peer's
# JSON lines (ratios, time units inverted, targets met and missed on a CUDA device and on the CPU,
# each its own, none on OpenCL; ctorch's header line about the CPU shown, not reported as a
# problem), --strict failing on a broken join and only then, ctorch alone
# with --no-peer, and the fake peer printing the cases ctorch bench's device groups name. Skipped (77) without python3.
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

# On the CPU: issue 22's table. train_mlp_b32 against PyTorch (1.5); float32 matmul from 512 on
# ctorch's own ratio to the engine it measured (0.9), whatever PyTorch's figure; bfloat16 2048
# against ctorch's float32 2048 (4x) only where this machine has AMX; the rest without a target.
sed 's/cuda:0/cpu/' "$work/ctorch.json" > "$work/ctorch-cpu.json"
sed 's/cuda:0/cpu/' "$work/peer.json" > "$work/peer-cpu.json"
cat >> "$work/ctorch-cpu.json" <<'JSON'
{"name": "matmul_f32_1024", "device": "cpu", "value": 95, "unit": "GFLOP/s", "baseline": 100, "ratio": 0.95, "target": "ratio >= 0.95", "met": true}
{"name": "matmul_f32_2048", "device": "cpu", "value": 80, "unit": "GFLOP/s", "baseline": 100, "ratio": 0.8, "target": "ratio >= 0.95", "met": false}
{"name": "matmul_bf16_2048", "device": "cpu", "value": 400, "unit": "GFLOP/s", "baseline": 100, "ratio": 4, "target": "ratio >= 0.9", "met": true}
JSON
cat >> "$work/peer-cpu.json" <<'JSON'
{"name": "matmul_f32_1024", "device": "cpu", "value": 190, "unit": "GFLOP/s", "peer": "torch 9.9"}
{"name": "matmul_f32_2048", "device": "cpu", "value": 40, "unit": "GFLOP/s", "peer": "torch 9.9"}
{"name": "matmul_bf16_2048", "device": "cpu", "value": 800, "unit": "GFLOP/s", "peer": "torch 9.9"}
JSON
"$python" "$compare" --ctorch "$work/ctorch-cpu.json" --peer "$work/peer-cpu.json" --device cpu --strict > "$work/out" 2>&1 || fail "cpu join"
row sum_f32_16M | grep -q "0.500$" || fail "cpu: sum has no target"
grep -q "^ctorch's CPU: Test CPU; OpenBLAS Haswell, oneDNN sse41 (BELOW the CPU)$" "$work/out" \
  || fail "cpu: ctorch bench's header line (the CPU and its engines' kernels) is shown"
row train_mlp_b32 | grep -q '5.000  >= 1.5  met$' || fail "cpu: train_mlp_b32 ratio 5 meets 1.5"
row matmul_f32_1024 | grep -q '95 *190 *0.500  >= 0.9x engine (0.950)  met$' || fail "cpu: matmul 1024 judged on its engine ratio"
row matmul_f32_2048 | grep -q '>= 0.9x engine (0.800)  MISSED$' || fail "cpu: matmul 2048 misses 0.9 of its engine"
if grep -q '^flags.* amx_bf16' /proc/cpuinfo; then
  row matmul_bf16_2048 | grep -q '>= 4x matmul_f32_2048 (5.000)  met$' || fail "cpu with AMX: bf16 is 5x float32"
  grep -q 'own baselines: 3 met, 1 missed' "$work/out" || fail "cpu: the count of targets"
else
  row matmul_bf16_2048 | grep -q '0.500$' || fail "cpu without AMX: bf16 has no target"
  grep -q 'own baselines: 2 met, 1 missed' "$work/out" || fail "cpu: the count of targets"
fi
"$python" "$compare" --ctorch "$work/ctorch-cpu.json" --no-peer "none here" --device cpu > "$work/out" 2>&1 || fail "cpu --no-peer"
row matmul_f32_2048 | grep -q 'MISSED$' && row train_mlp_b32 | grep -q '50000 *- *-  >= 1.5$' \
  || fail "cpu --no-peer: the engine target judged, PyTorch's shown"
sed 's/cuda:0/opencl:0/' "$work/ctorch.json" > "$work/ctorch-cl.json"
sed 's/cuda:0/opencl:0/' "$work/peer.json" > "$work/peer-cl.json"
"$python" "$compare" --ctorch "$work/ctorch-cl.json" --peer "$work/peer-cl.json" --device opencl:0 > "$work/out" 2>&1 || fail "opencl join"
grep -q 'MISSED\|met' "$work/out" && fail "opencl: no targets"
echo "ok: a join on the cpu with its own targets, none on opencl"

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
grep -q '256M\|_8192"' "$work/out" && fail "--quick ran a big size"
"$python" "$source_dir/bench/torch_bench.py" --fake --quick --json --device cpu > "$work/out" 2>&1 || fail "torch_bench.py --fake on the cpu"
for name in matmul_f32_256 matmul_f32_512 matmul_f32_1024 matmul_f32_2048 matmul_bf16_2048 matmul_f16_2048 \
            conv2d_fwd_bwd_cnn_b32 conv2d_fwd_bwd_cnn_b512 train_mlp_b32 train_mlp_b512 train_cnn_b32 train_cnn_b512 \
            train_transformer_block_b32; do
  grep -q "^{\"name\": \"$name\", \"device\": \"cpu\", \"value\": 1.0" "$work/out" || fail "fake peer on the cpu: no $name"
done
grep -q 'tf32' "$work/out" && fail "the cpu has no TF32 rows"
"$python" "$source_dir/bench/torch_bench.py" --fake --big --json --device cuda:0 '^add_f32,sum_dim1,b512$' > "$work/out" 2>&1 || fail "filter"
[ "$(grep -c . "$work/out")" = 6 ] && grep -q add_f32_256M "$work/out" && grep -q train_cnn_b512 "$work/out" \
  && grep -q conv2d_fwd_bwd_cnn_b512 "$work/out" \
  || fail "the filter '^add_f32,sum_dim1,b512\$' with --big: add 16M and 256M, sum_dim1, the three b512"
echo "ok: the fake peer"
exit 0
