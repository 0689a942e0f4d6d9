// The one debounce of the browser code: ``debounce(fn, ms)`` returns a function that runs ``fn`` (with the last
// arguments) once no call came for ``ms``; ``.cancel()`` drops a waiting run. Used where a page waits for the person
// to stop typing: the PTKB page's second digit, the pool form's coverage preview.
(function () {
  "use strict";

  function debounce(fn, ms) {
    let timer = null;
    function later(...args) {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        fn(...args);
      }, ms);
    }
    later.cancel = () => {
      clearTimeout(timer);
      timer = null;
    };
    return later;
  }

  window.EcastDebounce = { debounce };
})();
