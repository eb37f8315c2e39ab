// Who is signed in, to which workspace, and what they may do. The token is kept in sessionStorage (this tab only,
// gone when it closes) and sent only in the Authorization header; the permissions come from GET /me and decide
// which write controls the screens show (the server refuses the rest anyway).
import { createContext, Fragment, type ComponentChildren } from "preact"
import { useContext, useEffect, useMemo, useState } from "preact/hooks"
import { type ApiClient, makeApiClient, passwordToken } from "./lib/ApiClient.ts"

export interface Me {
  readonly kind: "user" | "service-account"
  readonly id: string
  readonly name: string
  readonly workspace: string
  readonly role: string | null
  readonly permissions: ReadonlyArray<string>
  readonly isPlatformAdmin: boolean
  readonly groups: ReadonlyArray<string>
}

interface Stored {
  readonly token: string
  readonly workspace: string
  readonly username: string
  readonly expiresAt: number
}

export interface Session {
  readonly api: ApiClient
  readonly me: Me
  readonly username: string
  readonly workspace: string
  readonly expiresAt: number
  /** Whether the caller holds `permission` (platform administrators hold every one). */
  readonly can: (permission: string) => boolean
  readonly signIn: (username: string, password: string, workspace: string) => Promise<void>
  readonly signOut: (reason?: string) => void
}

const storageKey = "troupe.console.session"
const workspaceKey = "troupe.console.workspace"
export const origin = window.location.origin

const readStored = (): Stored | undefined => {
  try {
    const value = JSON.parse(sessionStorage.getItem(storageKey) ?? "null") as Stored | null
    return value !== null && typeof value.token === "string" && value.expiresAt > Date.now() ? value : undefined
  } catch {
    return undefined
  }
}

export const lastWorkspace = () => localStorage.getItem(workspaceKey) ?? "default"

const SessionContext = createContext<Session | undefined>(undefined)

export const useSession = (): Session => {
  const session = useContext(SessionContext)
  if (session === undefined) throw new Error("useSession outside a signed-in console")
  return session
}

/** Whether the signed-in caller holds `permission` (nobody holds any before signing in). */
export const useCan = (): ((permission: string) => boolean) => {
  const session = useContext(SessionContext)
  return session === undefined ? () => false : session.can
}

export interface SessionGateProps {
  readonly signedOut: (props: {
    readonly signIn: (username: string, password: string, workspace: string) => Promise<void>
    readonly notice: string | undefined
  }) => ComponentChildren
  readonly children: ComponentChildren
}

/** Renders `signedOut` until someone signs in, then the children with the session in context. */
export const SessionGate = ({ signedOut, children }: SessionGateProps) => {
  const [stored, setStored] = useState<Stored | undefined>(readStored)
  const [me, setMe] = useState<Me | undefined>(undefined)
  const [notice, setNotice] = useState<string | undefined>(undefined)

  const signOut = (reason?: string) => {
    sessionStorage.removeItem(storageKey)
    setStored(undefined)
    setMe(undefined)
    setNotice(reason)
  }

  const api = useMemo(
    () =>
      stored === undefined
        ? undefined
        : makeApiClient({
            origin,
            workspace: stored.workspace,
            token: stored.token,
            onUnauthorized: () => signOut("Your session ended (the token expired or was revoked). Sign in again.")
          }),
    [stored]
  )

  const signIn = async (username: string, password: string, workspace: string) => {
    const answer = await passwordToken(origin, username, password, workspace)
    const next: Stored = { token: answer.access_token, workspace, username, expiresAt: Date.now() + answer.expires_in * 1000 }
    const client = makeApiClient({ origin, workspace, token: next.token })
    const who = await client.get<Me>("/me")
    sessionStorage.setItem(storageKey, JSON.stringify(next))
    localStorage.setItem(workspaceKey, workspace)
    setNotice(undefined)
    setMe(who)
    setStored(next)
  }

  // a stored session (a reload): its permissions may have changed since, so ask again
  useEffect(() => {
    if (api === undefined || me !== undefined) return
    let live = true
    api.get<Me>("/me").then(
      (who) => live && setMe(who),
      () => live && signOut("Sign in again.")
    )
    return () => {
      live = false
    }
  }, [api])

  useEffect(() => {
    if (stored === undefined) return
    const timer = setTimeout(() => signOut("Your session expired. Sign in again."), Math.max(0, stored.expiresAt - Date.now()))
    return () => clearTimeout(timer)
  }, [stored])

  if (stored === undefined || api === undefined) return <>{signedOut({ signIn, notice })}</>
  if (me === undefined) return <p class="boot">Signing in…</p>
  const permissions = new Set(me.permissions)
  const session: Session = {
    api,
    me,
    username: stored.username,
    workspace: stored.workspace,
    expiresAt: stored.expiresAt,
    can: (permission) => me.isPlatformAdmin || permissions.has(permission),
    signIn,
    signOut
  }
  // keyed by the token: another workspace (or user) starts every screen afresh
  return (
    <SessionContext.Provider value={session}>
      <Fragment key={stored.token}>{children}</Fragment>
    </SessionContext.Provider>
  )
}
