# AG+GEMM: baselines vs the copy-engine lowering (num_streams 1, 2) and the NCCL collective pipeline.
. benchmarks/gpu_env.sh || exit 1
default='stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine}:2,stream-lowering:2:chunks=2'
cd benchmarks && timeout 500 python3 -m torch.distributed.run --nproc-per-node 2 ag_gemm.py --reps 30 --warmup 5 --profile $OUT \
  --variants "${VARIANTS:-$default}" 2>&1 | grep -v -i warn | tail -45 | tee $OUT/ag_gemm.log
