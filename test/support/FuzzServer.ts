// The node a fuzz run talks to: rate limits out of the way (a run is thousands of requests a minute from one
// workspace; 429s would hide everything behind them), short function timeouts and webhook retries (a run must not
// wait on them), and a body limit low enough that a few mutated bodies cross it.
export const fuzzServerEnv: Record<string, string> = {
  TROUPE_LIMIT_READS: "10000000",
  TROUPE_LIMIT_WRITES: "10000000",
  TROUPE_LIMIT_BULK: "10000000",
  TROUPE_LIMIT_FUNCTIONS: "10000000",
  TROUPE_LIMIT_QUERIES: "10000000",
  TROUPE_FUNCTION_TIMEOUT_MS: "5000",
  TROUPE_WEBHOOK_RETRY_DELAYS: "0.2,0.5",
  TROUPE_MAX_BODY_BYTES: String(2 * 1024 * 1024)
}
