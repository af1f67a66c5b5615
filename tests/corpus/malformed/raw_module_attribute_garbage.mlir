// expected-error@+1 {{mesh device ids must be distinct and non-negative, got [0, -5]}}
module attributes {x = #fusion.parallel<[stream], mesh = [0, -5]>} {
}
