"""
The peer reputation model (reference §15), as plain synchronous Python (L4, no Twisted): the
scoring of peers' events (L{nodex.reputation.scoring}) and the ban list
(L{nodex.reputation.bans}); the service over them is L{nodex.services.reputation}.
"""
