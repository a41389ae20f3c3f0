"""Through dsrun: a client RMSprop's state saved by 2 ZeRO-2 ranks resumes on 1 (its elementwise state
re-partitioned like Adam's), and the losses equal one uninterrupted process."""

from conftest import REPO, assert_close_lists, losses, run_dsrun

WORKER = REPO / "tests" / "python" / "client_optimizer_worker.py"


def test_a_client_optimizer_saved_on_two_ranks_resumes_on_one_like_one_process(tmp_path):
    whole = run_dsrun(1, WORKER, "--ckpt", tmp_path / "unused", "--steps", "4")
    first = run_dsrun(2, WORKER, "--ckpt", tmp_path / "ckpt", "--steps", "4", "--save_at", "2")
    rest = run_dsrun(1, WORKER, "--ckpt", tmp_path / "ckpt", "--steps", "4", "--load")
    assert len(losses(whole.stdout)) == 4
    assert_close_lists(losses(first.stdout) + losses(rest.stdout), losses(whole.stdout), rel=1e-5)
