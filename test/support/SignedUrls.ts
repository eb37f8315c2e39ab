// A signed URL with its signature altered: its first character changed to another one, whatever it was (a fixed
// replacement would leave one URL in 64 unchanged).
export const alteredSignature = (url: string) => url.replace(/signature=(.)/, (_, c: string) => `signature=${c === "A" ? "B" : "A"}`)
