// The few members of @20minutes/s3rver (no types of its own) that test/support/S3Server.ts uses.
declare module "@20minutes/s3rver" {
  interface S3rverOptions {
    readonly port?: number
    readonly address?: string
    readonly silent?: boolean
    readonly directory: string
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string }>
    readonly allowMismatchedSignatures?: boolean
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<{ address: string; port: number }>
    close(): Promise<void>
  }
}
