"""Saving the examples' plots: matplotlib is optional, and the folder is configurable.

Plots go to the folder named by the environment variable ``SRCGRAD_PLOT_DIR``, or next to
the examples. Without matplotlib the examples still run and say that they skipped the plot.
"""
import os


def save_plot(name: str, draw, size=(5.0, 3.2), ncols: int = 1):
    """Call ``draw(ax)`` (``draw(axes)`` with ``ncols`` > 1) on a new figure and save it as
    ``name``; returns the path, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(matplotlib is not installed: skipped the plot {name})")
        return None
    fig, ax = plt.subplots(1, ncols, figsize=size)
    draw(ax)
    fig.tight_layout()
    folder = os.environ.get("SRCGRAD_PLOT_DIR") or os.path.dirname(os.path.abspath(__file__))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"plot saved to {path}")
    return path
