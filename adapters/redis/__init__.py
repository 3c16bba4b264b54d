"""Redis adapters: the core's ports for running turns, shared by every replica.

* :class:`RedisTurnLog`: the core's ``TurnLog`` on Redis streams: any replica
  re-attaches a client to a turn another replica runs; a turn whose replica died is
  ended for its watchers once its writer key expires.
* :class:`RedisSessionLeases`: the core's ``SessionLeases``: a session has one running
  turn (or rollback) across the deployment; a dead replica's claims expire.
* :class:`RedisTurnControlRelay`: the core's ``TurnControlRelay`` on pub/sub: an abort
  or an approval decision sent on any replica reaches the turn where it runs.
* :func:`connect_redis`: a checked client, with clear errors.

The three share one client and one key prefix. See ``docs/deployment.md``.
"""

from adapters.redis._connection import connect_redis, describe_redis_url
from adapters.redis._leases import RedisSessionLeases
from adapters.redis._relay import RedisTurnControlRelay
from adapters.redis._turnlog import REPLICA_LOST, RedisTurnLog

__all__ = [
    "REPLICA_LOST",
    "RedisSessionLeases",
    "RedisTurnControlRelay",
    "RedisTurnLog",
    "connect_redis",
    "describe_redis_url",
]
