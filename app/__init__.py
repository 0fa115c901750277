"""SpecChat's desktop app: a thin PySide6 view over the engine.

The engine runs on one worker thread that owns every MLX object; widgets only ever see its events.
"""
