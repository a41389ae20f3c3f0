"""The events DeepSpeed's engine hands its monitor while training (deepspeed/runtime/engine.py), at the
same moments and steps: the window's loss at the boundary's backward, the next lr (and the fp16 loss
scale) after each boundary's step. Rank 0 writes; the step is the number of samples trained on."""


class TrainingEvents:

    def __init__(self, engine, monitor):
        self.engine = engine
        self.monitor = monitor
        self.summed_loss = None  # this window's loss / gradient_accumulation_steps, summed (a tensor)

    def before_backward(self, loss):
        """DeepSpeed's backward: adds loss / gradient_accumulation_steps; at the boundary rank 0 writes
        Train/Samples/train_loss at the samples before this step."""
        e = self.engine
        part = loss.detach().float().mean() / e.gradient_accumulation_steps()
        self.summed_loss = part if self.summed_loss is None else self.summed_loss + part
        if e.is_gradient_accumulation_boundary() and e.global_rank == 0:
            self.monitor.write_events([("Train/Samples/train_loss", self.summed_loss.item(), e.global_samples)])

    def after_step(self):
        """DeepSpeed's step() at every boundary (an fp16 overflow included): the lr the next step uses and,
        with fp16, the loss scale, at the samples seen so far."""
        e = self.engine
        self.summed_loss = None
        if e.global_rank != 0:
            return
        events = [("Train/Samples/lr", e.get_lr()[0], e.global_samples)]
        if e.fp16_enabled():
            events.append(("Train/Samples/loss_scale", e.cur_scale, e.global_samples))
        self.monitor.write_events(events)
