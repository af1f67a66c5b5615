// Accepted: an empty input is an empty module, as in mlir-opt (no diagnostic expected).
