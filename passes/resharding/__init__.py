"""
The lowering of resharding `fusion.set`s (`hir-lower-communication` dispatches here): which
collective, local copy or combination of both moves the data from one sharding to another.
"""
