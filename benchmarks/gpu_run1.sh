# First GPU check: environment, CUDA tests, the multi-device examples over NCCL, a first AG+GEMM timing.
. benchmarks/gpu_env.sh || exit 1
set -x
nvidia-smi topo -m > $OUT/topo.txt 2>&1; cat $OUT/topo.txt
python3 -c "import torch; print(torch.__version__, torch.cuda.device_count(), torch.cuda.nccl.version())"
timeout 240 python3 -m pytest -q -x tests/test_runtime_hir.py tests/test_runtime_fusion_ops.py -m cuda -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/cuda_tests.log
for f in examples/ag_matmul.mlir examples/multidevice/*.mlir; do
  hir-opt --stream-lowering $f > /tmp/low.mlir && timeout 120 python3 -m torch.distributed.run --nproc-per-node 2 -m hir.tools.hir_run /tmp/low.mlir --reference $f --device cuda 2>&1 | grep -E "check|error" | head -3
done 2>&1 | tee $OUT/nccl_examples.log
timeout 200 python3 -m torch.distributed.run --nproc-per-node 2 benchmarks/ag_gemm.py --reps 10 --warmup 3 --variants "stream-lowering:2:chunks=2,stream-lowering:4:chunks=4" 2>&1 | grep -v Warn | tail -40 | tee $OUT/ag_gemm.log
