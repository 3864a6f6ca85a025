"""``torch.utils.tensorboard.SummaryWriter``, without TensorBoard: scalars and text are
appended to ``<log_dir>/scalars.jsonl``, one JSON object a line (``{"tag", "value",
"step", "wall_time"}``), readable with any JSON reader or pandas. TensorBoard's
event-file format (protocol buffers) is not written, so TensorBoard does not show them;
images, histograms, graphs and embeddings are accepted and not recorded (said once, as a
warning). Programs that log their losses (karpathy/makemore) run unchanged."""

from __future__ import annotations

import json
import os
import time
import warnings


def _number(value):
    if hasattr(value, "item"):
        return value.item()
    return float(value)


class SummaryWriter:
    """Appends what programs log to ``<log_dir>/scalars.jsonl`` (default ``runs/<time>``)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        if log_dir is None:
            log_dir = os.path.join("runs", time.strftime("%b%d_%H-%M-%S") + comment)
        self.log_dir = str(log_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        self._file = open(os.path.join(self.log_dir, "scalars.jsonl"), "a")  # noqa: SIM115
        self._warned = False

    def _write(self, tag, value, step, walltime) -> None:
        record = {"tag": tag, "value": value, "step": None if step is None else int(step),
                  "wall_time": time.time() if walltime is None else walltime}
        self._file.write(json.dumps(record) + "\n")

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, **_):
        """One number (a float, or a one-element tensor) under ``tag``."""
        self._write(tag, _number(scalar_value), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several numbers, each under ``main_tag/key``."""
        for key, value in tag_scalar_dict.items():
            self._write(f"{main_tag}/{key}", _number(value), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """A string under ``tag``."""
        self._write(tag, str(text_string), global_step, walltime)

    def _not_recorded(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"SummaryWriter.{what}: execmode records scalars and text only "
                          f"(in {self.log_dir}/scalars.jsonl); images, histograms, graphs "
                          "and embeddings are not recorded", stacklevel=3)

    def add_histogram(self, *args, **kwargs):
        """Accepted, not recorded."""
        self._not_recorded("add_histogram")

    def add_image(self, *args, **kwargs):
        """Accepted, not recorded."""
        self._not_recorded("add_image")

    def add_images(self, *args, **kwargs):
        """Accepted, not recorded."""
        self._not_recorded("add_images")

    def add_graph(self, *args, **kwargs):
        """Accepted, not recorded."""
        self._not_recorded("add_graph")

    def add_embedding(self, *args, **kwargs):
        """Accepted, not recorded."""
        self._not_recorded("add_embedding")

    def add_hparams(self, hparam_dict, metric_dict, *args, **kwargs):
        """The metrics, each under ``hparam/<name>``."""
        for key, value in metric_dict.items():
            self._write(f"hparam/{key}", _number(value), None, None)

    def flush(self) -> None:
        """Write what was logged to the file."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if not self._file.closed:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


__all__ = ["SummaryWriter"]
