package engine

import (
	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// The engine's side of the secret machinery (engine/secrets): what the
// private line on which a distributed map's child reports what its
// redactor learned (batch.LearnedType) teaches the parent. The
// machinery's refusals become node errors in codedError.

// learnFromBatch learns what a child's private line reports. Its text is
// never shown: an error names the line, not what it holds.
func (r *run) learnFromBatch(line []byte, sh *secrets.Share) error {
	l, err := batch.DecodeLearned(line)
	if err != nil {
		return Errorf(protocol.CodeInvocationFailed, "the child's stream has a %s line that cannot be read", batch.LearnedType)
	}
	return codedError(r.x.redact.Absorb(l, sh))
}

// learnSlots is how many batches may share what is left of the bounds when
// one is sent: it and the free slots of its map and of the execution, and
// no more than the map's batches not yet sent (left, this one included).
func learnSlots(slots, all chan struct{}, left int) int {
	return max(1, min(cap(slots)-len(slots), cap(all)-len(all), left-1)+1)
}
