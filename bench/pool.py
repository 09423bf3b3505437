"""The pooled PostgreSQL store beside the single-connection one, one client, in one run (D-STORE-PG-POOL).

``python -m bench.pool [ROUNDS]`` prints, for `view` and `str_replace` over one file of a tenant, the median
latency of each store and the ratio pooled / single. Within a round every variant makes the same calls, and the
order of the variants turns from round to round, so the machine's moods hit all alike; medians are over every
call of every round. The variants:

* ``single``: `PostgresStore`, one connection for its tenant's whole life (the setting of D-STORE-PG-RLS sent
  once, when it connects; a view is one message);
* ``pooled``: `PostgresPool.store`, a connection borrowed per transaction, the tenant's setting transaction-local:
  a view is one message (`BEGIN; set_config; SELECT; COMMIT`, bound on the client), an edit three (`BEGIN;
  set_config;` and the file's read, which takes the tenant's lock, as `single`'s edit does; the write; `COMMIT`);
* ``pooled-4``: the same, but an edit as before D-STORE-PG-POOL-EDIT: `BEGIN; set_config, pg_advisory_xact_lock`,
  then the read, the write, `COMMIT` (four messages);
* ``pooled-txt``: the same, the view's statement and the edit's read sent as text (planned every time) rather
  than prepared;
* ``pooled-3``: the same, but a view as a read transaction of its own (`BEGIN; set_config`, the `SELECT`,
  `ROLLBACK`: three messages), what the pooled store would cost without the one-message read.

The server is the tests' throwaway cluster (tests/postgres_support.py: a Unix socket, ``fsync=off``) unless
REFMEM_CONFORMANCE_POSTGRES names one (bench/stores.py, `postgres`).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable, Dict, List

from .stores import postgres

CALLS = 200
BODY = "".join(f"line {n}: the quick brown fox\n" for n in range(20))


def _variants(dsn: str, pool: Any) -> Dict[str, Callable[[str], Any]]:
    from refmem.stores.core import SqlStore
    from refmem.stores.pgpool import PooledEngine
    from refmem.stores.postgres import PostgresStore

    def pooled(**engine: bool) -> Callable[[str], Any]:
        def made(tenant: str) -> Any:
            key = pool.store(tenant=tenant).tenant_key  # the tenant's row made
            return SqlStore(PooledEngine(pool, key, **engine), key)

        return made

    return {
        "single": lambda tenant: PostgresStore(dsn, tenant=tenant, create=False),
        "pooled": pooled(),
        "pooled-4": pooled(edit_locks_in_read=False),
        "pooled-txt": pooled(prepare_reads=False),
        "pooled-3": pooled(one_message=False),
    }


def _phase(handler: Any, command: str) -> List[float]:
    spent = []
    for number in range(CALLS):
        if command == "view":
            tool_input = {"command": "view", "path": "/memories/f.md"}
        else:
            old, new = ("quick", "QUICK") if number % 2 == 0 else ("QUICK", "quick")
            tool_input = {"command": "str_replace", "path": "/memories/f.md", "old_str": f"line 7: the {old}",
                          "new_str": f"line 7: the {new}"}
        began = time.perf_counter()
        result = handler.execute(tool_input)
        spent.append(time.perf_counter() - began)
        if result.is_error:
            raise RuntimeError(result.output)
    return spent


def main(rounds: int = 5) -> int:
    from refmem import MemoryHandler

    skipped: Dict[str, str] = {}
    with postgres(None, skipped) as dsn:
        if not dsn:
            print(f"skipped: {skipped.get('postgresql')}")
            return 0
        from refmem.stores.pgpool import PostgresPool

        pool = PostgresPool(dsn, min_size=1, max_size=4)
        makers = _variants(dsn, pool)
        names = list(makers)
        handlers, stores = {}, []
        for name in names:
            stores.append(makers[name](f"bench-{name}"))
            handlers[name] = MemoryHandler(stores[-1])
            handlers[name].execute({"command": "create", "path": "/memories/f.md", "file_text": BODY})
        spent: Dict[tuple, List[float]] = {}
        for round_number in range(rounds):
            order = names[round_number % len(names) :] + names[: round_number % len(names)]
            for command in ("view", "str_replace"):
                for name in order:
                    spent.setdefault((name, command), []).extend(_phase(handlers[name], command))
        print(f"{rounds} rounds of {CALLS} calls each, one client, medians:")
        for command in ("view", "str_replace"):
            base = statistics.median(spent[("single", command)])
            for name in names:
                median = statistics.median(spent[(name, command)])
                print(f"  {command:12} {name:10} {median * 1e6:8.0f} us  {median / base:5.2f}x single")
        for store in stores:
            store.close()
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
