# Final GPU verification: the CUDA tests, the stream-lowering numerics and the fuzzer on a GPU with
# slowed streams, every multi-device example over NCCL with both backends, the host overhead.
. benchmarks/gpu_env.sh || exit 1
timeout 150 python3 -m pytest -q tests -m cuda -p no:cacheprovider 2>&1 | tail -3 > $OUT/cuda_tests.log
HIR_TEST_DEVICE=cuda timeout 200 python3 -m pytest -q tests/test_stream_lowering.py tests/test_fuzz_stream_lowering.py -p no:cacheprovider 2>&1 | tail -3 > $OUT/gpu_numerics.log
timeout 150 python3 -m torch.distributed.run --nproc-per-node 2 tests/distributed_driver.py --device cuda examples/ag_matmul.mlir examples/multidevice/*.mlir 2>&1 | grep CASE > $OUT/nccl_cases.log
timeout 60 python3 benchmarks/host_overhead.py --device cuda > $OUT/host_overhead.log 2>&1
cat $OUT/cuda_tests.log $OUT/gpu_numerics.log; grep -c OK $OUT/nccl_cases.log; grep -v OK $OUT/nccl_cases.log; grep -E "ratio|overhead" $OUT/host_overhead.log
