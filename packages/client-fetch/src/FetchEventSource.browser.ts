/**
 * In browsers the realtime helper uses the browser's own EventSource (the token in `?access_token=`), unless the
 * app hands it one in `SubscribeOptions.EventSource`: no fetch-based EventSource is bundled.
 *
 * @since 0.1.0
 */
export const FetchEventSource = undefined
