// RUN: hir-opt --version | filecheck %s
// CHECK: hir-opt built from xdsl version {{[0-9.]+}}
