// Files: the workspace's storage service (`/storage/workspace/{ws}/api/v1`, docs/storage.md). Upload by drag and
// drop or a file picker, each with a progress bar (XMLHttpRequest); browse by folder (clicking a folder filters on
// it), search by name; preview images, text and PDF (fetched with the token into a blob URL, never a URL carrying
// it); copy a signed URL; download; delete. The usage and quota are in the header.
import { useEffect, useState } from "preact/hooks"
import { useSession } from "../Session.tsx"
import { AsyncView, Button, confirmed, ErrorBox, Modal, PageHead, Pager, TableHead, useAction, useAsync, useToast, when } from "../Ui.tsx"

interface StoredFile {
  readonly id: string
  readonly name: string
  readonly folder: string
  readonly contentType: string
  readonly size: number
  readonly checksum: string
  readonly metadata: Record<string, unknown>
  readonly createdAt: string
}

interface Upload {
  readonly key: number
  readonly name: string
  readonly loaded: number
  readonly total: number
  readonly error?: string
  readonly done?: boolean
}

const size = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1024 ** 2
      ? `${(n / 1024).toFixed(1)} KiB`
      : n < 1024 ** 3
        ? `${(n / 1024 ** 2).toFixed(1)} MiB`
        : `${(n / 1024 ** 3).toFixed(2)} GiB`

const previewable = (type: string) =>
  type.startsWith("image/") && type !== "image/svg+xml"
    ? "image"
    : type === "application/pdf"
      ? "pdf"
      : type.startsWith("text/") || type === "application/json"
        ? "text"
        : undefined

export const FilesScreen = () => {
  const { api, can } = useSession()
  const toast = useToast()
  const base = `/storage/workspace/${encodeURIComponent(api.workspace)}/api/v1`
  const [folder, setFolder] = useState<string | undefined>(undefined)
  const [search, setSearch] = useState("")
  const [page, setPage] = useState(1)
  const [uploadFolder, setUploadFolder] = useState("")
  const [uploads, setUploads] = useState<ReadonlyArray<Upload>>([])
  const [dragging, setDragging] = useState(false)
  const [preview, setPreview] = useState<StoredFile | undefined>(undefined)
  const action = useAction()
  const list = useAsync(
    () =>
      api.call<{ data: ReadonlyArray<StoredFile>; total: number }>("GET", `${base}/files`, {
        query: { folder, search: search || undefined, page, limit: 50 }
      }),
    [folder, search, page]
  )
  const usage = useAsync(() => api.call<{ files: number; bytes: number; quotaBytes: number }>("GET", `${base}/usage`), [list.state.data])

  const send = (files: ReadonlyArray<File>) => {
    for (const file of files) {
      const key = Date.now() + Math.random()
      const update = (patch: Partial<Upload>) => setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...patch } : u)))
      setUploads((all) => [...all, { key, name: file.name, loaded: 0, total: file.size }])
      const form = new FormData()
      if (uploadFolder.trim() !== "") form.append("folder", uploadFolder.trim())
      form.append("file", file, file.name)
      api
        .upload<StoredFile>(`${base}/upload`, form, (loaded, total) => update({ loaded, total: total || file.size }))
        .then(
          () => {
            update({ done: true, loaded: file.size })
            list.reload()
          },
          (e: Error) => update({ error: e.message })
        )
    }
  }

  const fetchBlob = async (file: StoredFile, attachment: boolean) => {
    const res = await api.stream(`${base}/files/${file.id}${attachment ? "?download=true" : ""}`, {})
    if (!res.ok) throw new Error(`download failed with ${res.status}`)
    return res.blob()
  }

  const download = (file: StoredFile) =>
    action.run(async () => {
      const url = URL.createObjectURL(await fetchBlob(file, true))
      const a = document.createElement("a")
      a.href = url
      a.download = file.name
      a.click()
      setTimeout(() => URL.revokeObjectURL(url), 10_000)
    })

  const copySigned = (file: StoredFile) =>
    action.run(async () => {
      const signed = await api.call<{ url: string; expiresAt: string }>("POST", `${base}/files/${file.id}/signed-url`, {
        body: { expiresIn: 3600 }
      })
      await navigator.clipboard.writeText(signed.url).then(
        () => toast(`Signed URL copied (valid until ${when(signed.expiresAt)})`),
        () => window.prompt("Signed URL (valid for an hour)", signed.url)
      )
    })

  const remove = (file: StoredFile) =>
    confirmed(`Delete ${file.name} for good?`) &&
    action.run(async () => {
      await api.call("DELETE", `${base}/files/${file.id}`)
      toast(`${file.name} deleted`)
      list.reload()
    })

  const quota = usage.state.data
  return (
    <section class="files">
      <PageHead title="Files">
        {quota !== undefined && (
          <span class="muted">
            {quota.files} file(s), {size(quota.bytes)}
            {quota.quotaBytes > 0 && ` of ${size(quota.quotaBytes)}`}
          </span>
        )}
      </PageHead>
      {can("write:storage") && (
        <div
          class={`dropzone${dragging ? " dragging" : ""}`}
          onDragOver={(e) => {
            e.preventDefault()
            setDragging(true)
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={(e) => {
            e.preventDefault()
            setDragging(false)
            send(Array.from(e.dataTransfer?.files ?? []))
          }}
        >
          <p>Drop files here, or</p>
          <input
            type="file"
            multiple
            aria-label="Choose files"
            name="upload"
            onChange={(e) => {
              send(Array.from(e.currentTarget.files ?? []))
              e.currentTarget.value = ""
            }}
          />
          <label>
            into folder{" "}
            <input
              value={uploadFolder}
              placeholder="(root)"
              aria-label="Upload folder"
              onInput={(e) => setUploadFolder(e.currentTarget.value)}
            />
          </label>
        </div>
      )}
      {uploads.length > 0 && (
        <ul class="uploads">
          {uploads.map((u) => (
            <li key={u.key}>
              <span>{u.name}</span>
              <progress max={u.total || 1} value={u.loaded} />
              <span class={u.error ? "error-text" : "muted"}>
                {u.error ?? (u.done ? "done" : `${Math.round((100 * u.loaded) / (u.total || 1))}%`)}
              </span>
            </li>
          ))}
          <li>
            <Button onClick={() => setUploads((all) => all.filter((u) => !u.done && !u.error))}>Clear finished</Button>
          </li>
        </ul>
      )}
      <div class="filters">
        <span class="crumbs">
          <button
            type="button"
            class="btn btn-plain"
            onClick={() => {
              setFolder(undefined)
              setPage(1)
            }}
          >
            All files
          </button>
          {folder !== undefined && ` / ${folder === "" ? "(root)" : folder}`}
        </span>
        <input
          type="search"
          placeholder="Search names and folders"
          aria-label="Search files"
          value={search}
          onInput={(e) => {
            setSearch(e.currentTarget.value)
            setPage(1)
          }}
        />
      </div>
      {action.error !== undefined && <ErrorBox error={action.error} />}
      <AsyncView state={list.state}>
        {(result) => (
          <>
            <table class="table">
              <TableHead columns={["Name", "Folder", "Type", "Size", "Uploaded", ""]} />
              <tbody>
                {result.data.map((f) => (
                  <tr key={f.id}>
                    <td>
                      {previewable(f.contentType) ? (
                        <a
                          href={`#/files/${f.id}`}
                          onClick={(e) => {
                            e.preventDefault()
                            setPreview(f)
                          }}
                        >
                          {f.name}
                        </a>
                      ) : (
                        f.name
                      )}
                    </td>
                    <td>
                      <button
                        type="button"
                        class="btn btn-plain"
                        title="Show this folder"
                        onClick={() => {
                          setFolder(f.folder)
                          setPage(1)
                        }}
                      >
                        {f.folder === "" ? "(root)" : f.folder}
                      </button>
                    </td>
                    <td>{f.contentType}</td>
                    <td>{size(f.size)}</td>
                    <td>{when(f.createdAt)}</td>
                    <td class="actions">
                      <Button onClick={() => download(f)}>Download</Button>
                      <Button onClick={() => copySigned(f)}>Copy signed URL</Button>
                      <Button perm="write:storage" kind="danger" onClick={() => remove(f)}>
                        Delete
                      </Button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {result.data.length === 0 && <p class="muted">No files here yet.</p>}
            <Pager page={page} pageSize={50} total={result.total} onPage={setPage} />
          </>
        )}
      </AsyncView>
      {preview !== undefined && <Preview file={preview} load={() => fetchBlob(preview, false)} onClose={() => setPreview(undefined)} />}
    </section>
  )
}

const Preview = ({ file, load, onClose }: { file: StoredFile; load: () => Promise<Blob>; onClose: () => void }) => {
  const [url, setUrl] = useState<string | undefined>(undefined)
  const [text, setText] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const kind = previewable(file.contentType)
  useEffect(() => {
    let made: string | undefined
    load().then(
      async (blob) => {
        if (kind === "text") setText((await blob.slice(0, 256 * 1024).text()) + (blob.size > 256 * 1024 ? "\n…" : ""))
        else {
          made = URL.createObjectURL(blob)
          setUrl(made)
        }
      },
      (e) => setError(e)
    )
    return () => {
      if (made !== undefined) URL.revokeObjectURL(made)
    }
  }, [file.id])
  return (
    <Modal title={`${file.folder === "" ? "" : `${file.folder}/`}${file.name}`} onClose={onClose} wide>
      {error !== undefined && <ErrorBox error={error} />}
      {kind === "image" && url !== undefined && <img class="file-preview" src={url} alt={file.name} />}
      {kind === "pdf" && url !== undefined && <iframe class="file-preview pdf" src={url} title={file.name} sandbox="" />}
      {kind === "text" && text !== undefined && <pre class="file-preview">{text}</pre>}
      <p class="muted">
        {file.contentType} · {size(file.size)} · {file.checksum.slice(0, 23)}…
      </p>
    </Modal>
  )
}
