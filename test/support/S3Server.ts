// A real S3-protocol server for the storage tests: s3rver on 127.0.0.1 with one bucket in a temporary directory, an
// SDK client for it, and the node environment that points TROUPE_STORAGE at `s3://bucket/prefix` there.
import { S3Client } from "@aws-sdk/client-s3"
import S3rver from "@20minutes/s3rver"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }

export const startS3 = async (bucket: string, prefix: string, options: { readonly allowMismatchedSignatures?: boolean } = {}) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-s3rver-"))
  const s3 = new S3rver({
    port: 0,
    address: "127.0.0.1",
    silent: true,
    directory: dir,
    allowMismatchedSignatures: options.allowMismatchedSignatures ?? false,
    configureBuckets: [{ name: bucket }]
  })
  const { port } = await s3.run()
  const endpoint = `http://127.0.0.1:${port}`
  const client = new S3Client({ region: "us-east-1", forcePathStyle: true, endpoint, credentials })
  return {
    /** s3rver's directory: an object `key` of the bucket is the file `<dir>/<bucket>/<key>._S3rver_object` */
    dir,
    client,
    /** the node's environment for this bucket and prefix */
    env: {
      TROUPE_STORAGE: `s3://${bucket}/${prefix}`,
      TROUPE_S3_ENDPOINT: endpoint,
      TROUPE_S3_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey
    },
    close: async () => {
      client.destroy()
      await s3.close()
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}
