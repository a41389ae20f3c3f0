"""Draws a training run's loss curve from the CSV files DeepSpeed's csv_monitor writes (one "step,value" file
per event, the step counted in samples), with matplotlib, for examples/train_gpt.py.

    python3 examples/loss_curve.py runs/gpt     # -> runs/gpt/loss_curve.png
"""

import csv
import os
import sys

TRAIN_LOSS = "Train_Samples_train_loss.csv"  # csv_monitor's name for Train/Samples/train_loss
VALIDATION_LOSS = "Validation_loss.csv"      # what train_gpt.py writes through engine.monitor
PLOT = "loss_curve.png"


def read_series(path):
    """(steps, values) of one csv_monitor file; header rows (one per process that appended) are skipped."""
    steps, values = [], []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            try:
                step, value = int(row[0]), float(row[1])
            except (ValueError, IndexError):
                continue
            steps.append(step)
            values.append(value)
    return steps, values


def plot_loss_curve(csv_dir):
    """Writes CSV_DIR/loss_curve.png (training loss, and validation loss when recorded) and returns its path.
    Raises ImportError when matplotlib is missing and FileNotFoundError when there is no training loss file."""
    import matplotlib
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    train = read_series(os.path.join(csv_dir, TRAIN_LOSS))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(*train, label="training loss", linewidth=1)
    validation_path = os.path.join(csv_dir, VALIDATION_LOSS)
    if os.path.exists(validation_path):
        ax.plot(*read_series(validation_path), label="validation loss", marker="o")
    ax.set_xlabel("samples")
    ax.set_ylabel("loss (cross-entropy, nats per character)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    out = os.path.join(csv_dir, PLOT)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: loss_curve.py CSV_DIR (the csv_monitor's OUTPUT_PATH/JOB_NAME)")
    print(plot_loss_curve(sys.argv[1]))
