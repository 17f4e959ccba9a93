"""
The contract between the node's services (L5) and its edges (L6: RPC, P2P, the
operator's shell and metrics): zope interfaces split by service, the value types
they exchange, and the errors the edges map (L{nodex.api.errors}).  It imports
nothing above L4; the services implement it and the edges import nothing else of
the node.  The composition root (L{nodex.tap}) hands each edge the objects that
provide these interfaces.

Every method that may touch storage or the network returns a Deferred.
"""
