"""The target pipelined across Macs with MLX's distributed layer (ring backend), drafting on the head.

Layout: rank 0 is the head. It holds the tokenizer, the drafter (a draft model or lookup), the target's last
layers with its final norm and output head, and it runs the speculative round exactly as on one machine
(`engine/decoding/speculative.py`, unchanged). Ranks 1..N-1 hold earlier layers: rank N-1 the first ones and
the embeddings (mlx-lm's convention: activations flow N-1 -> ... -> 1 -> 0, every hop between ring neighbours).

Every target pass on the head starts with one small int32 message to every rank (`messages.py`: the count of
rejected positions to trim, the position the pass starts at, the tokens), so every rank trims the same count
and feeds the same tokens; then the activations travel the pipeline (`pipeline.py`). A speculative round is
one target pass, so one message per round. Every collective is evaluated where it is issued, in the same order
on every rank (`transport.py`).

One concept per file: `hostfile.py` (MLX's two hostfile formats), `local_launch.py` (real processes on
loopback, for tests and benchmarks), `launch.py` (`mlx.launch` with the user's hostfile), `cores.py` (a core per
rank on one machine), `group.py` (joining the ring), `ring_noise.py` (MLX's ring chatter kept out of the
terminal), `transport.py` (the collectives), `roll_call.py` (which host stopped), `watchdog.py` (which hosts
stopped answering), `fingerprint.py` and `handshake.py` (the same model everywhere, checked before the first
token), `layer_split.py` (layers by each Mac's free memory), `shard.py` (loading a rank's layers), `head.py` (the
head's proxy of the target), `worker.py` (the other ranks' loop), `cluster.py` (putting it together), and for the
app, which is the head already: `app_head.py` (this process as rank 0), `followers.py` (the other ranks it starts)
and `follow.py` (what they run).
"""
