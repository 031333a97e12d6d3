"""The README's Python block, inside the function a user writes around it: type-checked with
the rest of this directory (`mypy --strict`, tests/interop/sdk_bridge.rs, which also checks that
the lines between the markers are the README's). Not run: `drive.py` runs the same calls."""

import asyncio


async def readme() -> None:
    # README: begin
    import bridge, jsonrpc_duplex_runtime as rt

    class Tools:  # what the CLI calls back
        async def call_tool(self, name: str, input: str) -> str:
            return input.upper()
        async def event(self, event: bridge.TurnEvent) -> None:
            print(event["kind"])            # every event of a turn arrives before its answer

    async with await bridge.spawn("sdk_bridge", tools=Tools(), stderr="capture") as sdk:
        summary = await sdk.session.turn("hello world")     # a TurnSummary (TypedDict)
        async for event in sdk.session.history():           # $/enumerator/next, batch by batch
            ...
        cancel = rt.Cancel()
        task = asyncio.ensure_future(sdk.session.long_task(1000, progress=print, cancel=cancel))
        cancel.cancel()                                     # raises rt.RequestCancelled (-32800)
        try:
            await sdk.session.fail("grep")
        except bridge.ToolFailedError as e:
            print(e.data["reason"])                         # the typed error's data
    # leaving the block closes the CLI's stdin and returns its exit status from stop()
    # README: end
