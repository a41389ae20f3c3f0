#include "runtime/zero/offload_pipeline.h"

#include <c10/util/Exception.h>

#include <stdexcept>
#include <string>

namespace dsrt::zero {

void runOffloadPipeline(const std::vector<int64_t>& pieceEnds, const OffloadPieceOps& ops,
                        const PipelineStreams& streams, const std::vector<int64_t>& reportEnds,
                        const std::function<void(int64_t end)>& reported) {
  TORCH_INTERNAL_ASSERT(streams.compute && streams.download && streams.upload, "offload pipeline: a stream is missing");
  TORCH_INTERNAL_ASSERT(ops.step && ops.upload, "offload pipeline: step and upload are required");
  TORCH_INTERNAL_ASSERT(!pieceEnds.empty(), "offload pipeline: no pieces");
  // Host memory is rewritten below (the gradient by the downloads, the master and its 16-bit copy by the
  // optimizer) while the previous step's uploads might still read it: they are long done by now (the
  // forward read the model after them), so this one wait per step costs nothing and makes it certain.
  streams.upload->record()->hostWait();
  // The gradient and the model are final on the compute stream at this point: the copies start after it.
  const std::shared_ptr<PipelineEvent> computed = streams.compute->record();
  streams.upload->waitFor(*computed);

  std::vector<std::shared_ptr<PipelineEvent>> downloaded;
  if (ops.download) {
    // Every piece's download is issued now: the copy engine runs ahead of CPU Adam by as many pieces as
    // it can, and the host waits for each only when that piece is next.
    streams.download->waitFor(*computed);
    int64_t begin = 0;
    for (int64_t end : pieceEnds) {
      streams.download->enqueue([download = ops.download, begin, end] { download(begin, end); });
      downloaded.push_back(streams.download->record());
      begin = end;
    }
  }
  auto ready = [&](size_t piece) {
    const int64_t begin = piece == 0 ? 0 : pieceEnds[piece - 1];
    if (!downloaded.empty()) {
      downloaded[piece]->hostWait();
    }
    if (ops.prepare) {
      ops.prepare(begin, pieceEnds[piece]);
    }
  };

  ready(0);
  if (!ops.stepStreamsPieces) {
    // The optimizer reads the whole gradient before it reports a piece (FlatOptimizer's base stepInPieces):
    // waiting for piece i at its report would let it read pieces still in flight on the download stream,
    // and scale them after it read them.
    for (size_t i = 1; i < pieceEnds.size(); ++i) {
      ready(i);
    }
  }
  size_t piece = 0;
  size_t nextReport = 0;
  bool computeWaitsLast = false;
  ops.step(pieceEnds, [&](int64_t end) {
    TORCH_INTERNAL_ASSERT(piece < pieceEnds.size() && end == pieceEnds[piece], "offload pipeline: piece ", piece,
                          " stepped up to ", end, ", expected ", piece < pieceEnds.size() ? pieceEnds[piece] : -1);
    const int64_t begin = piece == 0 ? 0 : pieceEnds[piece - 1];
    // The upload of this piece runs while the next one steps.
    streams.upload->enqueue([upload = ops.upload, begin, end] { upload(begin, end); });
    computeWaitsLast = false;
    if (nextReport < reportEnds.size() && reportEnds[nextReport] <= end) {
      streams.compute->waitFor(*streams.upload->record());
      computeWaitsLast = true;
      for (; nextReport < reportEnds.size() && reportEnds[nextReport] <= end; ++nextReport) {
        if (reported) {
          reported(reportEnds[nextReport]);
        }
      }
    }
    if (++piece < pieceEnds.size() && ops.stepStreamsPieces) {
      ready(piece);
    }
  });
  TORCH_INTERNAL_ASSERT(piece == pieceEnds.size(), "offload pipeline: the optimizer stepped ", piece, " of ",
                        pieceEnds.size(), " pieces");
  if (!computeWaitsLast) {
    // Whatever reads the model next on the compute stream (the forward) reads it uploaded.
    streams.compute->waitFor(*streams.upload->record());
  }
}

std::vector<int64_t> offloadPieceEnds(int64_t numel, const std::vector<int64_t>& required, int64_t pieceNumel,
                                      int64_t align) {
  if (pieceNumel < 1 || align < 1) {
    throw std::invalid_argument("offload pieces: pieceNumel and align must be >= 1, got " + std::to_string(pieceNumel) +
                                " and " + std::to_string(align));
  }
  if (required.empty() || required.back() != numel) {
    throw std::invalid_argument("offload pieces: the required ends must finish at " + std::to_string(numel));
  }
  const int64_t step = (pieceNumel + align - 1) / align * align;
  std::vector<int64_t> ends;
  int64_t begin = 0;
  for (int64_t end : required) {
    if (end < begin) {
      throw std::invalid_argument("offload pieces: required ends must not decrease, got " + std::to_string(end) +
                                  " after " + std::to_string(begin));
    }
    // Cuts on multiples of `step` counted from 0, so the pieces stay aligned whatever `required` holds.
    for (int64_t cut = (begin / step + 1) * step; cut < end; cut += step) {
      ends.push_back(cut);
    }
    if (end > begin || ends.empty()) {
      ends.push_back(end);
    }
    begin = end;
  }
  return ends;
}

}  // namespace dsrt::zero
