// Package readme holds the README's Go block, inside the function a user writes around it:
// vetted and built with the rest of this module (`go vet ./...`, tests/interop/sdk_bridge.rs,
// which also checks that the lines between the markers are the README's). Not run: ./drive
// makes the same calls.
package readme

import (
	"context"
	"errors"
	"fmt"
	"os"

	"sdkbridge/bridge"
)

// Run is the README's block.
func Run(ctx context.Context, myTools bridge.Tools) error {
	// README: begin
	sdk, err := bridge.Spawn(ctx, "sdk_bridge", nil, bridge.SpawnOptions{Stderr: os.Stderr}, myTools)
	if err != nil {
		return err
	}
	defer sdk.Stop()
	summary, err := sdk.Session.Turn(ctx, "hello world") // myTools.Event saw every event before this
	if err != nil {
		return err
	}
	var failed *bridge.ToolFailedError
	if err := sdk.Session.Fail(ctx, "grep"); errors.As(err, &failed) {
		fmt.Println(failed.Data.Reason)
	}
	history := sdk.Session.History(ctx)
	for event, ok, err := history.Next(ctx); ok && err == nil; event, ok, err = history.Next(ctx) {
		fmt.Println(event.Kind)
	}
	// README: end
	fmt.Println(summary)
	return nil
}
