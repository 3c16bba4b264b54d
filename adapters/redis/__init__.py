"""Redis adapters: the turn log shared by every replica.

* :class:`RedisTurnLog`: the core's ``TurnLog`` on Redis streams, leases and pub/sub:
  any replica re-attaches a client to, or aborts, a turn another replica runs; a
  session has one running turn across the deployment; a turn whose replica died is
  ended for its watchers once its lease expires.
* :func:`connect_redis`: a checked client, with clear errors.

See ``docs/deployment.md``.
"""

from adapters.redis._connection import connect_redis, describe_redis_url
from adapters.redis._turnlog import REPLICA_LOST, RedisTurnLog

__all__ = ["REPLICA_LOST", "RedisTurnLog", "connect_redis", "describe_redis_url"]
