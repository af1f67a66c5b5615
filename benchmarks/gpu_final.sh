# Final GPU session: CUDA tests, the multi-device examples over NCCL (both backends),
# AG+GEMM and GEMM+RS on 2 GPUs, host overhead on one. Logs under $OUT.
. benchmarks/gpu_env.sh || exit 1
timeout 200 python3 -m pytest -q tests -m cuda -p no:cacheprovider 2>&1 | tail -4 > $OUT/cuda_tests.log
for f in examples/ag_matmul.mlir examples/multidevice/*.mlir; do
  for p in stream-lowering 'stream-lowering{backend=copy-engine}'; do
    hir-opt -p "$p" $f > /tmp/low.mlir && echo "$f $p: $(timeout 100 python3 -m torch.distributed.run --nproc-per-node 2 -m hir.tools.hir_run /tmp/low.mlir --reference $f --device cuda --num-streams 3 2>&1 | grep -E 'check|error' | head -1)"
  done
done > $OUT/nccl_examples.log 2>&1
cd benchmarks
timeout 200 python3 -m torch.distributed.run --nproc-per-node 2 ag_gemm.py --reps 30 --warmup 5 --profile $OUT \
  --variants 'stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine}:2,stream-lowering:2,stream-lowering:2:chunks=2,stream-lowering:4:chunks=4' 2>&1 | grep -v -i warn | tail -40 > $OUT/ag_gemm.log
timeout 150 python3 -m torch.distributed.run --nproc-per-node 2 gemm_rs.py --reps 20 --sizes 16384x4096,32768x2048,16384x1024,32768x1024 2>&1 | grep -v -i warn | tail -40 > $OUT/gemm_rs.log
timeout 60 python3 host_overhead.py --device cuda 2>&1 | tail -15 > $OUT/host_overhead.log
cat $OUT/cuda_tests.log $OUT/nccl_examples.log $OUT/ag_gemm.log $OUT/gemm_rs.log $OUT/host_overhead.log
