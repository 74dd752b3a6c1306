package main

import (
	"testing"

	"github.com/runnerd/lambda-runner/infra/config"
)

// TestRTBatchShapeUnreachable: what a client of the function URL or API
// Gateway controls (path, query, headers, cookies, body) cannot make an
// event a batch: the batch member must be a top-level key of the event,
// whose top-level keys AWS writes.
func TestRTBatchShapeUnreachable(t *testing.T) {
	inner := `{\"runnerFanOutBatch\":{\"v\":1}}`
	for _, ev := range []string{
		`{"version":"2.0","rawPath":"/runnerFanOutBatch","rawQueryString":"runnerFanOutBatch=1","headers":{"runnerfanoutbatch":"{}","x":"runnerFanOutBatch"},"queryStringParameters":{"runnerFanOutBatch":"{}"},"cookies":["runnerFanOutBatch={}"],"requestContext":{"domainName":"abc.lambda-url.us-east-1.on.aws","http":{"method":"POST","path":"/runnerFanOutBatch"}},"body":"` + inner + `","isBase64Encoded":false}`,
		`{"resource":"/","path":"/runnerFanOutBatch","httpMethod":"POST","headers":{"runnerFanOutBatch":"1"},"multiValueHeaders":{"runnerFanOutBatch":["1"]},"body":"` + inner + `","requestContext":{}}`,
		`{"httpMethod":"POST","path":"/","headers":{"runnerFanOutBatch":"1"},"body":"` + inner + `","requestContext":{"elb":{"targetGroupArn":"x"}}}`,
	} {
		kind, err := eventKindOf([]byte(ev), config.LambdaModeAuto)
		if err != nil || kind == kindBatch {
			t.Errorf("kind %v, err %v for %s", kind, err, ev)
		}
	}
}
