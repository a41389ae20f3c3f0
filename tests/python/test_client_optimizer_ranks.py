"""Through dsrun: a client RMSprop's state saved by 2 ZeRO-2 ranks resumes on 1 (its elementwise state
re-partitioned like Adam's), and the losses equal one uninterrupted process."""

from client_optimizer_worker import train
from conftest import REPO, assert_close_lists, losses, run_dsrun

WORKER = REPO / "tests" / "python" / "client_optimizer_worker.py"


def test_a_client_optimizer_saved_on_two_ranks_resumes_on_one_like_one_process(tmp_path):
    whole = train(tmp_path / "unused", steps=4)  # one uninterrupted process: this one
    first = run_dsrun(2, WORKER, "--ckpt", tmp_path / "ckpt", "--steps", "4", "--save_at", "2")
    rest = run_dsrun(1, WORKER, "--ckpt", tmp_path / "ckpt", "--steps", "4", "--load")
    assert len(whole) == 4
    assert_close_lists(losses(first.stdout) + losses(rest.stdout), whole, rel=1e-5)
