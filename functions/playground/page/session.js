// The token's keeping across reloads. It lives in sessionStorage: this
// tab only, gone when the tab closes, never sent anywhere by the browser
// (unlike a cookie), and readable only by this origin's scripts, which
// the page's Content-Security-Policy limits to its own files. It is never
// put in localStorage, where it would outlive the tab and reach every
// other tab of the origin, nor in the run history.

const KEY = "runner.playground.token";

// savedToken is the token kept by an earlier load of this tab, or "".
export function savedToken() {
  try {
    return sessionStorage.getItem(KEY) || "";
  } catch {
    return ""; // storage disabled: the page asks for the token
  }
}

// keepToken keeps t for the next load of this tab.
export function keepToken(t) {
  try {
    if (t) sessionStorage.setItem(KEY, t);
  } catch {
    // storage disabled or full: the token lasts this load only
  }
}

// forgetToken drops the kept token: the runner refused it.
export function forgetToken() {
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // nothing kept
  }
}
