// Server-sent events read from a fetch body, so the token travels in the Authorization header (EventSource can
// only put it in the URL). An incremental parser of the text/event-stream format: feed it chunks as they arrive.

export interface SseMessage {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
}

export interface SseParser {
  /** Adds a chunk of text; answers the messages it completed. */
  readonly push: (chunk: string) => ReadonlyArray<SseMessage>
  /** The `retry:` hint last seen, in ms. */
  readonly retry: () => number | undefined
}

export const makeSseParser = (): SseParser => {
  let buffer = ""
  let data: Array<string> = []
  let id: string | undefined
  let event: string | undefined
  let retry: number | undefined
  const line = (text: string, out: Array<SseMessage>) => {
    if (text === "") {
      if (data.length > 0) out.push({ id, event, data: data.join("\n") })
      data = []
      event = undefined
      id = undefined
      return
    }
    if (text.startsWith(":")) return
    const colon = text.indexOf(":")
    const field = colon < 0 ? text : text.slice(0, colon)
    let value = colon < 0 ? "" : text.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "data") data.push(value)
    else if (field === "id") id = value
    else if (field === "event") event = value
    else if (field === "retry" && /^\d+$/.test(value)) retry = Number(value)
  }
  return {
    push: (chunk) => {
      buffer += chunk
      const out: Array<SseMessage> = []
      let at: number
      while ((at = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const text = buffer.slice(0, at)
        const width = buffer.startsWith("\r\n", at) ? 2 : 1
        // a lone \r at the very end may be the first half of \r\n: wait for the next chunk
        if (buffer[at] === "\r" && at + 1 === buffer.length) break
        buffer = buffer.slice(at + width)
        line(text, out)
      }
      return out
    },
    retry: () => retry
  }
}
