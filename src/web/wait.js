// The JavaScript half of src/web/wait.rs.
let notify = null;
export function guard_wait_init(callback) { notify = callback; }
export function guard_wait(promise, slot) {
  promise.then((value) => notify(slot, true, value), (reason) => notify(slot, false, reason));
}
