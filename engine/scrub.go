package engine

import (
	"encoding/json"

	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// The engine's side of the secret machinery (engine/secrets): the private
// line on which a distributed map's child reports what its redactor
// learned. The machinery's refusals become node errors in codedError.

// batchLearnedType is the private line of a child's stream that reports
// values its redactor learned. It is never emitted to the parent's sink.
const batchLearnedType = "batch.learned"

// batchLearned is the private line of a child's stream.
type batchLearned struct {
	Type string `json:"type"`
	secrets.Learned
}

// learnFromBatch learns what a child's private line reports. Its text is
// never shown: an error names the line, not what it holds.
func (r *run) learnFromBatch(line []byte, sh *secrets.Share) error {
	var l batchLearned
	if err := json.Unmarshal(line, &l); err != nil {
		return Errorf(protocol.CodeInvocationFailed, "the child's stream has a %s line that cannot be read", batchLearnedType)
	}
	return codedError(r.x.redact.Absorb(l.Learned, sh))
}

// learnSlots is how many batches may share what is left of the bounds when
// one is sent: it and the free slots of its map and of the execution, and
// no more than the map's batches not yet sent (left, this one included).
func learnSlots(slots, all chan struct{}, left int) int {
	return max(1, min(cap(slots)-len(slots), cap(all)-len(all), left-1)+1)
}
