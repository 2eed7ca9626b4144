// The JavaScript half of src/web/wait.rs.
let notify = null;
export function guard_wait_init(callback) { notify = callback; }
export function guard_wait(promise, slot, ticket) {
  promise.then(
    (value) => notify(slot, ticket, true, value),
    (reason) => notify(slot, ticket, false, reason),
  );
}
