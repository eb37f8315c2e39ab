/**
 * The EventSource the realtime helper uses where a runtime has none of its own (Node) or where the token must travel
 * as a header: the `eventsource` package, on fetch. Browsers get `FetchEventSource.browser.ts` instead (the
 * package's `browser` field), so a browser bundle carries no second EventSource.
 *
 * @since 0.1.0
 */
export { EventSource as FetchEventSource } from "eventsource"
