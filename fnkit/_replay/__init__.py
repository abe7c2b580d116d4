"""Replay: a night of real events run through a handler, one row per finding, as a DataFrame.

Its rooms, each importing only those below it (the import-linter contract "replay-rooms"):
- `dask`: the Dask engine (`engine="dask"`), a plug-in `run` looks up by name;
- `run`: `replay` and `replay_partitions`: the configuration, the inputs (the sources' importers),
  the engines and the frames;
- `partition`: one partition's rows (`replay_partition`), the replay loop both engines call;
- `columns`: the frame's columns, each one's dtype and meaning (`fnkit.columns()`), data only.

The public names live in `fnkit` (`fnkit.replay`, `fnkit.replay_partitions`, `fnkit.columns`).
The importers' shared core stays `fnkit/_import.py`: the sources import it, and replay sits above them.
"""
