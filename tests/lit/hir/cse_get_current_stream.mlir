// RUN: hir-opt %s -p canonicalize,cse,dce | filecheck %s

// hir.get_current_stream reads the current-stream slot: two reads with no hir.set_current_stream
// between merge; a switch between them (directly, inside a loop, or in an unknown call) keeps both.
// An unused read disappears. (xDSL's cse does not look at effect resources: any op that writes,
// e.g. hir.synchronize or hir.launch, between two reads also keeps both. Safe, only conservative.)

// CHECK-LABEL: func.func @no_switch(
func.func @no_switch(%k: index) -> (!hir.stream, !hir.stream, !hir.stream) {
  // CHECK-NEXT: %a = hir.get_current_stream
  // CHECK-NEXT: %s = hir.stream %k
  // CHECK-NEXT: func.return %a, %a, %s
  %a = hir.get_current_stream
  %s = hir.stream %k
  %b = hir.get_current_stream
  %unused = hir.get_current_stream
  func.return %a, %b, %s : !hir.stream, !hir.stream, !hir.stream
}

// CHECK-LABEL: func.func @switch(
func.func @switch(%k: index) -> (!hir.stream, !hir.stream) {
  // CHECK-NEXT: %a = hir.get_current_stream
  // CHECK-NEXT: %s = hir.stream %k
  // CHECK-NEXT: hir.set_current_stream %s
  // CHECK-NEXT: %b = hir.get_current_stream
  // CHECK-NEXT: func.return %a, %b
  %a = hir.get_current_stream
  %s = hir.stream %k
  hir.set_current_stream %s
  %b = hir.get_current_stream
  func.return %a, %b : !hir.stream, !hir.stream
}

// CHECK-LABEL: func.func @switch_in_loop(
func.func @switch_in_loop(%c0: index, %c4: index, %c1: index) -> (!hir.stream, !hir.stream) {
  // CHECK-NEXT: %a = hir.get_current_stream
  // CHECK-NEXT: hir.for
  // CHECK:      hir.set_current_stream
  // CHECK:      %b = hir.get_current_stream
  // CHECK-NEXT: func.return %a, %b
  %a = hir.get_current_stream
  hir.for %i = %c0 to %c4 step %c1 {
    %s = hir.stream %i
    hir.set_current_stream %s
  }
  %b = hir.get_current_stream
  func.return %a, %b : !hir.stream, !hir.stream
}

func.func private @unknown()

// CHECK-LABEL: func.func @switch_in_call(
func.func @switch_in_call() -> (!hir.stream, !hir.stream) {
  // CHECK-NEXT: %a = hir.get_current_stream
  // CHECK-NEXT: func.call @unknown()
  // CHECK-NEXT: %b = hir.get_current_stream
  %a = hir.get_current_stream
  func.call @unknown() : () -> ()
  %b = hir.get_current_stream
  func.return %a, %b : !hir.stream, !hir.stream
}
