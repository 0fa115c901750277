"""Memory fit: the verdict and the numbers shown with it."""

from __future__ import annotations

from engine.models.memory import check_fit, estimate_memory_gb, physical_memory_gb, usable_memory_gb


def test_fit_verdicts_carry_the_numbers() -> None:
    assert check_fit(6.0, 12.0).fits
    assert check_fit(6.0, 12.0).message() == "Fits: needs about 6.0 GB of the 12.0 GB available to models."
    too_big = check_fit(21.0, 12.0)
    assert not too_big.fits
    assert too_big.message().startswith("Does not fit: needs about 21.0 GB but this machine gives models about 12.0 GB.")


def test_this_machine_offers_a_share_of_its_memory() -> None:
    assert 0 < usable_memory_gb() <= physical_memory_gb()
    assert estimate_memory_gb(4.0) > 4.0


def test_peak_memory_is_what_is_held_from_the_start_of_a_generation() -> None:
    """A generation resets MLX's peak, which then read 0 until the next allocation: "Peak memory 0 MB" while a message
    was read, beside a pair holding hundreds."""
    import mlx.core as mx

    from engine.models.memory import peak_memory_gb

    held = mx.zeros((1 << 20,), dtype=mx.float32)  # 4 MB, as a model's weights are held across generations
    mx.eval(held)
    mx.reset_peak_memory()  # as generate_stream does
    assert peak_memory_gb() * 1e9 >= held.nbytes
