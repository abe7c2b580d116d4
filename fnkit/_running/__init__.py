"""The running code: calling a handler the way the platform does, in this process or in a worker process.

In this process ("none", "thread"): `inprocess` (captured output, timeouts; the context is `context`). In a
worker process, a hard stop is a kill, never an injected exception.

`fnkit.invoke(..., isolation="process")` lands here. The caller's process keeps a pool of
warm worker processes; each call goes to an idle one over a socket (msgpack, with the events as a pickle;
the handler by its import path when it has one, else by cloudpickle, so functions from a
notebook cell or `__main__` travel too) and comes back as an `Invocation`. Nothing the
worker sends is unpickled here: results, errors, output and reports travel as data
(msgpack of JSON-like values, strings, numbers), so a handler's return value can never
run code in the caller. Whatever the handler does (exits, crashes in C, loops
while swallowing every exception, blocks in a system call, eats memory past the limit),
the caller waits at most the timeout plus a short grace, kills that worker if it must,
and the next call gets a fresh one.

Where workers come from: on POSIX, a small "zygote" process (started once, single
threaded, with fnkit preloaded) forks each worker, so a threaded caller such as a Jupyter
kernel or a web server is never forked itself and a new worker costs a few milliseconds.
Elsewhere each worker is its own new interpreter (multiprocessing's spawn). Workers die
with the caller: the zygote leaves when its control socket closes and takes its workers
with it.

Each call starts from the state the caller set (working directory, environment, imports
path, memory limit: a hard limit, which the handler cannot raise); every process the
handler started is ended and reaped with its call (the worker is their subreaper); a
worker that ended while idle is never handed a call.

Inside a worker, output is captured per call (print, sys.stderr, logging; the caller's
logging levels are followed), the context is a copy of the caller's with its deadline,
and what a handler changes on the context (a simulator's virtual `context.sleep`) comes
back. Services on the context that must stay in the caller (the mail content API) are
called back over the same socket while the handler runs. `report(topic, value)` lets
code running in the handler send facts back to the caller (`Invocation.reports`).

The rooms, each one concern, lowest first (no room imports one above it):

- `context`: the `Context` a handler gets (its names, its request id, its clock).
- `stop`: stopping, from another thread, the calls one thread makes (`Stopper`, a Stop button).
- `inprocess`: a call in this process ("none" and "thread"): captured output, timeouts;
  what every mode shares (the isolation chosen, the memory limit checked).
- `wire`: the protocol, what travels between the caller and a worker and how it is read.
- `worker`: the worker's side, what runs in a worker process.
- `zygote`: the process starter.
- `pool`: the caller's handles on its workers, and the pool of idle ones.
- `outgoing`: what travels to a worker (the handler, the event, the context, the state a call starts from).
- `exchange`: one exchange with a worker as a generator of steps, and the driver on the caller's thread.
- `loop`: the driver of the same steps on an event loop (a server's).
- `calls`: the calls users make (`invoke`, `invoke_many`), which choose between this process and a worker.
- `plan`: one handler call as a source's `run` makes it (`PlannedCall`: the event, the context, its finish).
"""
