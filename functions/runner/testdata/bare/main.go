// Command bare is the yardstick of make bench-lambda: the smallest
// lambdaurl function, a streamed 200 with a tiny JSON body for every
// request. The runner's cold start is reported beside this one's, built
// with the same toolchain in the same run.
package main

import (
	"net/http"

	"github.com/aws/aws-lambda-go/lambdaurl"
)

func main() {
	lambdaurl.Start(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"version":1}` + "\n"))
	}))
}
