# AG+GEMM: the copy-engine lowering with push chunks chosen automatically vs fixed.
. benchmarks/gpu_env.sh || exit 1
v='stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine chunks=1}:1,stream-lowering{backend=copy-engine chunks=2}:1,stream-lowering{backend=copy-engine chunks=4}:1'
cd benchmarks && timeout 300 python3 -m torch.distributed.run --nproc-per-node 2 ag_gemm.py --reps 30 --warmup 5 --profile $OUT --variants "$v" 2>&1 | grep -v -i warn | tail -36 > $OUT/ag_gemm.log; cat $OUT/ag_gemm.log
