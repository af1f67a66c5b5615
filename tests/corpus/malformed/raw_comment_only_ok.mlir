// Accepted: nothing but comments is an empty module, as in mlir-opt (no diagnostic expected).
