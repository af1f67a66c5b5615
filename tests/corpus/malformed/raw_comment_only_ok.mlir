// nothing but a comment
// expected-error@+1 {{Could not parse entire input!}}
