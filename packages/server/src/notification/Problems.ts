// The 400 of the notification service: VALIDATION_ERROR whose details name each offending field (`to[1]`,
// `variables.name`, `email.smtpUrl`), as the contract's error body carries them.
import { badRequest, type BadRequest, details } from "@troupe/api/Errors"

/** One problem as a 400 naming its field. */
export const invalid = (field: string, message: string): BadRequest => invalidAll([[field, message]])

/** Several problems in one 400. */
export const invalidAll = (problems: ReadonlyArray<readonly [string, string]>): BadRequest =>
  badRequest({
    message: problems.map(([field, message]) => (message.startsWith(field) ? message : `${field}: ${message}`)).join("; "),
    code: "VALIDATION_ERROR",
    details: details(problems)
  })
